"""The pictures draw what they claim (#25 item 4), checked on the figures' artists, not only
that a file exists."""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

import tdse
from tdse.model.potential import total
from tdse.ui import plots, spectrum_plots

MOVING = {
    "name": "mv", "grid": {"x_min": -6.4, "x_max": 6.4, "dx": 0.2, "stencil": 3},
    "potential": {"a": 0.5, "centres": [{"x0": -1.0, "Z": 2.0, "amplitude": 0.8, "frequency": 3.0},
                                        {"x0": 1.0, "Z": 2.0, "amplitude": 0.8, "frequency": 3.0}]},
    "time": {"dt": 0.01, "t_end": 1.0}, "propagator": {"method": "dense", "tolerance": 1e-12},
    "output": {"every": 10},
}


@pytest.fixture(scope="module")
def moving_run():
    return tdse.simulate(MOVING, backend="numpy").arrays()


def test_snapshots_draw_the_potential_at_each_snapshots_time(moving_run):
    d = moving_run
    fig = plots.snapshots_figure(d, "mv")
    cfg = plots._config(d)
    axes = [ax for ax in fig.axes if ax.get_ylabel().startswith("V")]
    t = d["snapshots/t"]
    picks = sorted(set(np.linspace(0, t.size - 1, min(4, t.size)).astype(int)))
    assert len(axes) == len(picks) == 4
    for ax, i in zip(axes, picks):
        (line,) = ax.get_lines()
        assert np.allclose(line.get_ydata(), total(cfg.potential, d["grid/x"], float(t[i])))
    # the wells moved: the last panel's V is not V(x, 0)
    assert not np.allclose(axes[-1].get_lines()[0].get_ydata(), axes[0].get_lines()[0].get_ydata())
    plots.plt.close(fig)


def test_spacetime_centre_lines_stand_out_and_no_node_noise(moving_run):
    from matplotlib.colors import to_rgb
    fig = plots.spacetime_figure(moving_run, "mv")
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert len(lines) == 2                                   # the two centres, no node dots
    for ln in lines:
        assert to_rgb(ln.get_color()) != (1.0, 1.0, 1.0)     # not white on the bright map
        assert ln.get_path_effects()                          # a dark edge around the dashes
        assert np.allclose(ln.get_xdata(), moving_run["snapshots/centres"][:, lines.index(ln)])
    plots.plt.close(fig)


def test_spacetime_shows_the_whole_box_in_log_colour_legend_off_the_data(moving_run):
    """#58 item 13: the whole box, symmetric about x = 0; log colour from LOG_RANGE of the
    peak by default (linear on request); the legend below the map; a static atom draws no
    centre paths and no legend."""
    from matplotlib.colors import LogNorm
    d = moving_run
    fig = plots.spacetime_figure(d, "mv")
    ax = fig.axes[0]
    half = max(abs(d["grid/x"][0]), abs(d["grid/x"][-1]))
    assert ax.get_xlim() == pytest.approx((-half, half))
    norm = ax.collections[0].norm
    assert isinstance(norm, LogNorm)
    peak = float((abs(d["snapshots/psi"]) ** 2).max())
    assert norm.vmax == pytest.approx(peak) and norm.vmin == pytest.approx(plots.LOG_RANGE * peak)
    leg = ax.get_legend()
    assert leg is not None and leg.get_bbox_to_anchor().transformed(ax.transAxes.inverted()).y1 < 0.01
    plots.plt.close(fig)
    fig = plots.spacetime_figure(d, "mv", log=False)
    assert not isinstance(fig.axes[0].collections[0].norm, LogNorm)
    plots.plt.close(fig)
    static = dict(d, **{"snapshots/centres": np.zeros_like(d["snapshots/centres"])})
    fig = plots.spacetime_figure(static, "st")
    assert not fig.axes[0].get_lines() and fig.axes[0].get_legend() is None
    plots.plt.close(fig)


def test_node_number_on_its_own_axis_and_no_node_picture_for_one_atom(moving_run, tmp_path):
    """#58 item 13: <n>(t) on its own axis (its range its own, not the node counts'), the
    counts below; a run of one centre gets no node picture."""
    d = moving_run
    fig = plots.nodes_figure(d, "mv", 0.01)
    top, bottom = fig.axes
    (line,) = top.get_lines()
    n = d["observables/n_mean"]
    assert np.allclose(line.get_ydata(), n[np.isfinite(n)])
    assert top.get_ylim()[1] < 1.2 * np.nanmax(n) + 0.1          # not squashed by the counts
    assert np.allclose(bottom.get_lines()[0].get_ydata(), d["snapshots/nodes"])
    plots.plt.close(fig)
    atom = {**MOVING, "name": "one", "potential": {"a": 0.5, "centres": [{"x0": 0.0, "Z": 1.0}]}}
    path = tdse.simulate(atom, backend="numpy", out=str(tmp_path)).path
    names = [p.rsplit("_", 1)[1] for p in plots.plot_run(path, str(tmp_path))]
    assert "nodes.png" not in names and "spacetime.png" in names


def test_populations_carry_the_stated_error_as_a_floor(moving_run):
    d = moving_run
    floor, what = plots.population_floor(d)
    assert floor is not None and "time error" in what
    te = d["snapshots/time_error_populations"]
    assert np.isfinite(te).all() and floor.max() == pytest.approx(te.max())
    fig = plots.populations_figure(d, "mv", (floor, what))
    for ax in fig.axes:
        (band,) = ax.collections
        ys = band.get_paths()[0].vertices[:, 1]
        assert ys.max() == pytest.approx(max(floor.max(), 1e-12))
    plots.plt.close(fig)


def test_autocorrelation_picture_holds_every_printed_peak_and_marks_sidebands(moving_run, tmp_path):
    from tdse.studies.spectra import from_file
    res = from_file(moving_run, "autocorrelation", "hann")
    assert res["drive_omega"] == 3.0 and res["peaks"]
    path = spectrum_plots.plot_spectrum(res, str(tmp_path / "s.png"))
    assert path
    # draw again to inspect
    fig, ax = plots.plt.subplots()
    plots.plt.close(fig)
    import matplotlib.pyplot as plt
    before = set(plt.get_fignums())
    orig = plt.close
    try:
        plt.close = lambda f=None: None
        spectrum_plots.plot_spectrum(res, str(tmp_path / "s2.png"))
        fig = plt.figure(max(set(plt.get_fignums()) - before))
    finally:
        plt.close = orig
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    assert all(lo < e < hi for e in res["peaks"])
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert any("sidebands" in s for s in labels) and any("reference" in s for s in labels)
    plt.close(fig)


def test_floquet_map_draws_shifts_and_rings_ties(tmp_path):
    """A synthetic scan: the map's lines are eps_n - E_n(0) folded; a shared Floquet state
    gets a red ring."""
    import matplotlib.pyplot as plt
    T = 2.0
    w = 2 * math.pi / T
    pts = []
    for v in (1.0, 2.0, 3.0):
        states = [{"n": 0, "E_n": -1.0, "overlap": 0.9, "quasi_energy": 0.1, "shift": 0.01 * v,
                   "shared_with": [1] if v == 2.0 else []},
                  {"n": 1, "E_n": -0.5, "overlap": 0.8, "quasi_energy": 0.2, "shift": -0.02 * v,
                   "shared_with": [0] if v == 2.0 else []}]
        pts.append({"value": v, "omega": w, "states": states, "ties": [[0, 1]] if v == 2.0 else []})
    res = {"name": "syn", "key": "potential.centres.frequency", "key_unit": "1/(hbar/E_h)", "n": 64,
           "points": pts}
    orig = plt.close
    try:
        plt.close = lambda f=None: None
        plots.plot_scan(res, str(tmp_path / "m.png"))
        fig = plt.gcf()
    finally:
        plt.close = orig
    ax = fig.axes[0]
    data = [ln.get_ydata() for ln in ax.get_lines() if ln.get_linestyle() == "-"]
    assert any(np.allclose(y, [0.01, 0.02, 0.03]) for y in data)
    assert any(np.allclose(y, [-0.02, -0.04, -0.06]) for y in data)
    rings = [c for c in ax.collections if "avoided crossing" in str(c.get_label())]
    assert rings and np.allclose(rings[0].get_offsets()[:, 0], [2.0])
    assert "folded" in ax.get_ylabel()
    plt.close(fig)


def test_floquet_and_scan_state_one_quasi_energy_for_one_state():
    """#25: the same ground state's quasi-energy is one number in `tdse floquet` and in
    `--scan` (the first zone [-omega/2, omega/2) in both)."""
    from tdse.studies.floquet import analyse, scan
    cfg = tdse.config.loads(Path(__import__("os").path.join(
        __import__("os").path.dirname(__import__("os").path.dirname(__file__)), "inputs", "tiny.toml")).read_text())
    cfg = cfg.with_value("propagator.method", "dense").with_value("time.dt", 0.02)
    one = analyse(cfg, count=2)
    many = scan(cfg, "potential.centres.frequency", [3.0], count=2, batched=False)  # same method
    batched = scan(cfg, "potential.centres.frequency", [3.0], count=2)    # block Chebyshev U(T)
    w = 2 * math.pi / one["period"]
    for a, b, c in zip(one["states"], many["points"][0]["states"], batched["points"][0]["states"]):
        assert a["quasi_energy"] == pytest.approx(b["quasi_energy"], abs=1e-12)
        assert a["quasi_energy"] == pytest.approx(c["quasi_energy"], abs=1e-9)
        assert -w / 2 <= a["quasi_energy"] < w / 2
        shift = (a["quasi_energy"] - a["E_n"] + w / 2) % w - w / 2
        assert a["shift"] == pytest.approx(shift, abs=1e-12)
    assert all(-w / 2 <= e < w / 2 for e in one["quasi_energies"])


def test_the_drift_picture_names_the_field_only_where_there_is_one(moving_run):
    """#58 item 13: no field wording on a run without a field (moving centres here), and
    'per remaining norm' only with an absorber; <H> with its stated time error as bars at the
    snapshots, the largest in the title (timeerror.energy_band: its bound is tested in
    test_time_error_parts)."""
    fig = plots.drift_figure(moving_run)
    title = fig.axes[1].get_title().split("\n")
    assert title[0] == "energy <T + V(t)>"
    assert "snapshots/time_error" in moving_run          # #58 item 13: <H> with its stated error
    from tdse.run.timeerror import energy_band
    band = energy_band(plots._config(moving_run), moving_run["grid/x"], moving_run["snapshots/t"],
                       moving_run["snapshots/psi"], moving_run["snapshots/time_error"])
    assert title[1] == f"its stated time error (bars, at the snapshots) <= {band[2].max():.1g} hartree"
    bars = [c for c in fig.axes[1].containers if hasattr(c, "has_yerr")]
    assert len(bars) == 1 and bars[0].has_yerr
    plots.plt.close(fig)


def test_a_laser_run_draws_its_field_and_the_response(tmp_path, monkeypatch):
    """#58 item 13: a run with a field gets a picture of E(t), <x>(t) and the dipole
    acceleration on one time axis, each the run's own observable; a run without one none."""
    laser = {**MOVING, "name": "las", "field": {"E0": 0.05, "omega": 0.5, "duration": 1.0}}
    path = tdse.simulate(laser, backend="numpy", out=str(tmp_path)).path
    figs = []
    real = plots.plt.close
    monkeypatch.setattr(plots.plt, "close", lambda fig=None: figs.append(fig))
    files = plots.plot_run(path, str(tmp_path))
    byname = dict(zip([os.path.basename(f).rsplit("_", 1)[1][:-4] for f in files], figs))
    d = plots.read(path)
    top, mid, bottom = byname["field"].axes
    assert np.allclose(top.get_lines()[0].get_ydata(), d["observables/field"])
    assert np.allclose(mid.get_lines()[0].get_ydata(), d["observables/x_mean"])
    assert np.allclose(bottom.get_lines()[0].get_ydata(), d["observables/acceleration"])
    assert np.ptp(d["observables/field"]) > 0.01
    for f in figs:
        real(f)
    figs.clear()
    files = plots.plot_run(tdse.simulate(MOVING, backend="numpy", out=str(tmp_path / "b")).path,
                           str(tmp_path / "b"))
    assert not any(f.endswith("_field.png") for f in files)
    for f in figs:
        real(f)


def test_converge_draws_populations_and_energy_apart_each_with_its_target(tmp_path, monkeypatch):
    """#58 item 13: the populations and <H> (hartree) on rows of their own, vs dx and vs dt;
    the target line only on the group the study's target is on (the populations)."""
    import json
    doc = json.loads(Path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                      "docs", "convergence", "h2plus_moving_converge.json")).read_text())
    figs = []
    real = plots.plt.close
    monkeypatch.setattr(plots.plt, "close", lambda fig=None: figs.append(fig))
    plots.plot_converge(doc, str(tmp_path / "c.png"))
    axs = figs[0].axes
    assert len(axs) == 4
    for ax, group in zip(axs, ("populations", "populations", "energy", "energy")):
        assert group in ax.get_title()
        dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        assert bool(dashed) == (group == "populations")
        if dashed:
            assert np.allclose(dashed[0].get_ydata(), doc["target"])
    e = doc["space"]["dvr"]["energy"]["errors"]
    assert np.allclose(axs[2].get_lines()[-1].get_ydata(), e)   # the DVR's <H> errors, row 2
    real(figs[0])


def test_dvr_snapshots_are_drawn_by_the_sinc_interpolant():
    """#58 item 13: a DVR run's psi is drawn between its points by its own basis, sum_j psi_j
    sinc((x - x_j)/dx): a Gaussian of width 1 sampled at dx = 0.2 comes back to 1e-8 between
    the points (the stencils' runs are drawn at the points themselves)."""
    from tdse.config import parse
    cfg = parse({**MOVING, "grid": {**MOVING["grid"], "stencil": "dvr"}})
    x = np.arange(cfg.grid.n) * cfg.grid.dx + cfg.grid.x_min
    xs, draw = plots._between_points(x, cfg, (-3.0, 3.0))
    assert xs.size > 4 * np.count_nonzero(np.abs(x) <= 3.0) - 2
    g = lambda y: np.exp(-y ** 2 / 2)  # noqa: E731
    assert np.abs(draw(g(x)) - g(xs)).max() < 1e-8
    three = parse(MOVING)
    xs3, same = plots._between_points(x, three, (-3.0, 3.0))
    assert xs3 is x and same(g(x)) is not None and np.array_equal(same(g(x)), g(x))
