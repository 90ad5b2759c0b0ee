"""The CLI through click's CliRunner, and the HDF5 round trip."""
import json
import os
import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from tdse.ui.cli import main
from tdse.run.snapshots import read


@pytest.fixture
def runner():
    return CliRunner()


def tiny(inputs_dir):
    return os.path.join(inputs_dir, "tiny.toml")


def test_run_writes_h5_and_plots_and_refuses_overwrite(runner, inputs_dir, tmp_path):
    out = tmp_path / "res"
    r = runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(out), "--backend", "numpy", "--plots"])
    assert r.exit_code == 0, r.output
    h5 = out / "tiny.h5"
    d = read(h5)
    a = d["attrs"]
    assert a["complete"] and "atomic units" in a["units"] and a["backend"] == "numpy"
    assert "tiny" in a["input_toml"] and a["theta"] > 0 and a["plan_method"] == "auto"
    T = d["snapshots/t"].size
    assert T == 11 and d["snapshots/psi"].shape == (11, 64)
    np.testing.assert_allclose(d["snapshots/t"], np.arange(11) * 0.1, atol=1e-12)
    np.testing.assert_allclose(d["observables/norm"], 1.0, atol=1e-12)
    # observables every step (output.observables_every = 1), snapshots every 20 steps
    np.testing.assert_allclose(d["observables/t"], np.arange(201) * 0.005, atol=1e-12)
    assert d["observables/populations_h0"].shape == (201, 4)
    assert a["scheme"] == "cfm4" and a["stencil"] == "3"  # the effective numerics, recorded
    assert d["observables/populations_h0"][0, 0] == pytest.approx(1.0, abs=1e-12)
    for what in ("spacetime", "nodes", "populations", "drift", "snapshots"):
        assert (out / f"tiny_{what}.png").stat().st_size > 1000
    before = h5.read_bytes()
    r2 = runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(out)])
    assert r2.exit_code == 2 and "--force" in r2.output
    assert h5.read_bytes() == before  # nothing already written is lost
    r3 = runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(out), "--force", "--no-plots"])
    assert r3.exit_code == 0, r3.output
    # #58 item 10: pictures on request; without --plots none is drawn, and the run says how
    for p in out.glob("*.png"):
        p.unlink()
    r4 = runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(out), "--force"])
    assert r4.exit_code == 0 and not list(out.glob("*.png")), r4.output
    assert f"`tdse plot {h5}` draws them, or --plots" in r4.output


def test_h5_roundtrip_matches_direct_propagation(runner, inputs_dir, tmp_path):
    from tdse.config import loads as cfgmod_loads
    from tdse.model import states as model_states
    from tdse.model.grid import points
    from tdse.numerics.precheck import precheck
    from tdse.numerics.stepper import Stepper as Propagator
    from tdse.model.initial import initial_state
    r = runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(tmp_path), "--no-plots"])
    assert r.exit_code == 0, r.output
    d = read(tmp_path / "tiny.h5")
    cfg = cfgmod_loads(d["attrs"]["effective_toml"])  # the method auto chose
    _, phi = model_states.eigenstates(cfg, 0.0, cfg.output.populations)  # as the run solves it
    psi = initial_state(cfg, points(cfg.grid), phi)
    prop = Propagator(cfg, precheck(cfg).plan)
    assert d["attrs"]["method"] == cfg.propagator.method
    for j in range(cfg.time.steps):
        psi = prop.step(psi, j)
    np.testing.assert_array_equal(d["snapshots/psi"][-1], psi)  # bit-identical


def test_states_json_matches_eigvalsh(runner, inputs_dir):
    from tdse.model import hamiltonian
    from tdse.config import load
    r = runner.invoke(main, ["states", tiny(inputs_dir), "--count", "3", "--json"])
    assert r.exit_code == 0
    E = json.loads(r.output)["energies"]
    w = np.linalg.eigvalsh(hamiltonian.dense(load(tiny(inputs_dir)), 0.0))
    np.testing.assert_allclose(E, w[:3], rtol=1e-10)


def test_validate_shows_progress(monkeypatch):
    """#25: `tdse validate` is not silent while it works: a progress bar over its checks
    (on stderr; --json keeps stdout clean)."""
    from tdse.studies import validate as v
    for name in ("check_expm", "check_propagation", "check_chebyshev_reference", "check_order",
                 "check_static_phase", "check_dvr", "check_nodes"):
        monkeypatch.setattr(v, name, lambda *a, **k: [dict(check="x", error=0.0, tolerance=1.0, passed=True)])
    r = CliRunner().invoke(main, ["validate", "--quick"])
    assert r.exit_code == 0 and "validate" in r.output and "7/7" in r.output and "all passed" in r.output


def test_validate_quick_json(runner):
    r = runner.invoke(main, ["validate", "--quick", "--json"])
    assert r.exit_code == 0, r.output[-2000:]
    res = json.loads(r.output)
    assert res["passed"] and len(res["checks"]) > 20
    kinds = {c["check"] for c in res["checks"]}
    assert {"expm", "propagation", "chebyshev_reference", "order", "static_phase", "dvr", "nodes"} <= kinds


def test_info(runner):
    r = runner.invoke(main, ["info"])
    assert r.exit_code == 0 and "numpy" in r.output and "atomic units" in r.output


BAD = [
    ("dx = 0.2", "dx = -0.2", "grid.dx"),
    ("dt = 0.005", "dt = 0.007", "time.t_end"),
    ('method = "auto"', 'method = "magic"', "propagator.method"),
    ("Z = 2.0", 'Z = "two"', "potential.centres[0].Z"),
]


@pytest.mark.parametrize("old,new,key", BAD)
def test_bad_input_exit_2_one_line(runner, inputs_dir, tmp_path, old, new, key):
    text = Path(tiny(inputs_dir)).read_text()
    assert old in text
    p = tmp_path / "bad.toml"
    p.write_text(text.replace(old, new, 1))
    r = runner.invoke(main, ["run", str(p), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and key in lines[0] and "Traceback" not in r.output


def test_a_tolerance_the_steps_cannot_meet_above_dt_min_is_one_line(runner, inputs_dir, tmp_path):
    """Adaptive steps that would need a step under time.dt_min stop the run mid-way with one
    line naming the tolerance, exit code 2 (had been StepTooSmall's traceback, exit 1)."""
    r = runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(tmp_path / "o"), "-q",
                             "--set", "time.tolerance=1e-300", "--set", "time.t_end=0.05"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "time.tolerance = 1e-300" in lines[0] and "time.dt_min" in lines[0]


def test_a_run_stopped_by_dt_min_resumes_with_another_tolerance(runner, inputs_dir, tmp_path):
    """tiny in a sin^2 pulse at a tolerance whose steps reach time.dt_min at t = 0.265: the
    run stops with one line that says how it goes on; `tdse resume FILE.part --set
    time.tolerance=...` continues from its last whole snapshot -- the snapshots before it
    as they were, the change recorded (resumed_with, the effective input) -- and its stated
    error at t_end bounds the true one (the same pulse at dt/8, fixed steps); another key
    is refused in one line."""
    import tdse
    from tdse.config import load, with_values
    from tdse.run.snapshots import resume_state
    from tdse.run.timeerror import phase_blind_distance
    pulse = [("field.E0", 1.0), ("field.omega", 20.0), ("field.duration", 1.0), ("field.envelope", "sin2")]
    out = tmp_path / "o"
    sets = [f"{k}={v}" for k, v in pulse] + ["time.dt_min=0.0025", "time.tolerance=2e-9"]
    r = runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(out), "-q"] +
                      [a for s in sets for a in ("--set", s)])
    part = str(out / "tiny.h5.part")
    assert r.exit_code == 2 and "time.dt_min" in r.output
    assert f"`tdse resume {part} --set time.tolerance=...` continues" in r.output
    kept = resume_state(part)
    assert kept["count"] >= 2 and kept["step"] > 0               # (stopped mid-way)
    with h5py.File(part) as f:
        before = f["snapshots/psi"][:kept["count"]]
    bad = runner.invoke(main, ["resume", part, "--set", "grid.dx=0.1"])
    assert bad.exit_code == 2 and len(bad.output.strip().splitlines()) == 1 and "grid.dx" in bad.output
    ok = runner.invoke(main, ["resume", part, "--set", "time.tolerance=1e-8", "-q"])
    assert ok.exit_code == 0, ok.output
    with h5py.File(out / "tiny.h5") as f:
        assert json.loads(f.attrs["resumed_with"]) == [{"step": kept["step"], "set": {"time.tolerance": 1e-8},
                                                        "was": {"time.tolerance": 2e-9}}]
        assert "tolerance = 1e-08" in f.attrs["effective_toml"]
        assert np.array_equal(f["snapshots/psi"][:kept["count"]], before)
        psi, stated = f["snapshots/psi"][-1], json.loads(f.attrs["time_error"])["error_at_t_end"]
    cfg = with_values(load(tiny(inputs_dir)), pulse + [("time.dt", 0.005 / 8)])
    true = phase_blind_distance(psi, tdse.simulate(cfg, backend="numpy").psi[-1], cfg.grid.dx)
    assert true < stated < 10 * true, (true, stated)


@pytest.mark.parametrize("name, sets, key", [
    ("atom_hhg.toml", ["field.E0=1e300", "propagator.method=taylor"], "time.dt"),    # (had been OverflowError)
    ("atom_hhg.toml", ["field.E0=1e10", "propagator.method=chebyshev"], "time.dt"),  # (ValueError: terms)
    ("h2plus_nuclei.toml", ["nuclei.mass=1e-300"], "time.dt"),
    # (eigh's inf/NaN; then time.dt's refusal after NumPy's RuntimeWarning: 1/R infinite)
    ("h2plus_nuclei.toml", ["nuclei.R_min=1e-300"], "nuclei.R_min")])
def test_a_hamiltonian_out_of_reach_is_refused_in_one_line(runner, inputs_dir, tmp_path,
                                                           name, sets, key):
    """Values that make dt ||H|| beyond double precision (u theta >= 1) or infinite, or beyond
    the Chebyshev series' most terms, are refused before any work, one line naming time.dt
    (or the key whose value makes a term infinite), exit 2 (found by feeding every key absurd
    values: these had been tracebacks; the dense method had run on, a [nuclei] run's mass
    1e-300 too)."""
    args = ["run", os.path.join(inputs_dir, name), "--out", str(tmp_path / "o"), "-q"]
    for s in sets:
        args += ["--set", s]
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no warning printed before the line)
        r = runner.invoke(main, args)
    assert r.exit_code == 2 and "Traceback" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and key in lines[0] and lines[0].startswith("error:")
    assert key != "time.dt" or "precision" in lines[0] or "terms" in lines[0]


#: the inputs whose sections the fuzz's keys need ([field] in atom_hhg, [nuclei] in h2plus_nuclei)
_FUZZ_INPUTS = {"field": ("atom_hhg.toml", "0.5"), "nuclei": ("h2plus_nuclei.toml", "0.4")}
_FUZZ_VALUES = ["0", "-1", "-0.0", "nan", "inf", "1e300", "1e-300", "abc", '""', "[]", "[1, -2]", "{}", "true"]
#: a [nuclei] run that starts costs ~4 s on 2 CPUs (its initial state's eigensolve): the
#: magnitudes only, and the two of its keys' values that start most runs (0, 1e-300) left out
_FUZZ_NUCLEI = ["-1", "nan", "inf", "1e300", "abc"]


@pytest.mark.parametrize("section", ["other", "other:5", "other:dvr", "field", "nuclei"])
def test_every_key_given_absurd_values_runs_or_says_one_line(runner, inputs_dir, tmp_path, section):
    """Each scalar key of tdse.keys.KEYS set (--set) to each of 13 absurd values (a [nuclei]
    input's keys to 5) on a short run: exit 0 (a value that is fine), or exit 2 with one line naming the problem -- never a
    traceback (this sweep found StepTooSmall's, the Chebyshev series' beyond its most terms,
    the Taylor plan's OverflowError and a [nuclei] run's inf/NaN eigensolve, now refusals)."""
    from tdse.keys import KEYS
    section, _, stencil = section.partition(":")      # (tiny on its 5-point or DVR grid too: the
    stencil = ["--set", f"grid.stencil={stencil}"] if stencil else []    # 5-point's Z = 1e300)
    name, t_end = _FUZZ_INPUTS.get(section, ("tiny.toml", "0.05"))
    keys = [k.name for k in KEYS if "." in k.name and (k.name.split(".")[0] == section or (
        section == "other" and k.name.split(".")[0] not in _FUZZ_INPUTS))]
    assert len(keys) >= 10
    bad = []
    for key in keys:
        for v in _FUZZ_NUCLEI if section == "nuclei" else _FUZZ_VALUES:
            r = runner.invoke(main, ["run", os.path.join(inputs_dir, name), "--out", str(tmp_path / "o"),
                                     "--force", "-q", *stencil, "--set", f"{key}={v}", "--set", f"time.t_end={t_end}"])
            errors = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
            if r.exit_code not in (0, 2) or "Traceback" in r.output or (r.exit_code == 2 and len(errors) != 1):
                bad.append((key, v, r.exit_code, repr(r.exception)))
    assert not bad, bad


def test_a_scan_member_out_of_reach_is_one_line(runner, inputs_dir, tmp_path):
    """A scan whose second member's ||H|| is beyond the Chebyshev series (the plan prechecks
    the first member alone): one line naming time.dt, exit 2 (had been a ValueError's
    traceback from inside the batch's steps)."""
    r = runner.invoke(main, ["scan", tiny(inputs_dir), "--set", "potential.centres.Z=1,1e12",
                             "--set", "time.t_end=0.05", "--out", str(tmp_path / "o"), "-q"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "time.dt" in lines[0] and "Chebyshev" in lines[0]


@pytest.mark.parametrize("V, stencil, key", [
    ("1/x", 3, "potential.V"), ("log(x)", "dvr", "potential.V"), ("1/0", 3, "potential.V"),   # at t = 0
    ("log(0.01 - t) / sqrt(x**2 + 1)", 3, "potential ="),           # NaN from t = 0.01: the precheck
    ("-1/sqrt(x**2 + 1) + 1/(t - 0.02)", 3, "potential ="),         # inf at one step's instant:
    ("-1/sqrt(x**2 + 1) + 1/(t - 0.02)", "dvr", "potential =")])   # H(t)'s eigenstates there
def test_a_formula_potential_that_is_not_finite_is_one_line(runner, inputs_dir, tmp_path, V, stencil, key):
    """An expression potential not finite on the grid -- at t = 0 (the config's check), at
    later times (the precheck's bounds) or at one observation's instant (H(t)'s eigenstates) --
    is one line naming the potential, exit 2 (each had been a LAPACK error's or Python's
    ZeroDivisionError's traceback)."""
    text = Path(tiny(inputs_dir)).read_text()
    i, j = text.index("[potential]"), text.index("[initial]")
    p = tmp_path / "expr.toml"
    p.write_text(text[:i] + f'[potential]\nkind = "expression"\nV = "{V}"\n\n' + text[j:])
    r = runner.invoke(main, ["run", str(p), "--out", str(tmp_path / "o"), "-q", "--set", "time.t_end=0.05",
                             "--set", f"grid.stencil={stencil}"])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    lines = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and key in lines[0] and "not finite" in lines[0], r.output


@pytest.mark.parametrize("which, formula", [("E", "1/t"), ("E", "1/(t - 0.02)"), ("E", "1/0"), ("A", "log(t)")])
def test_a_formula_field_that_is_not_finite_is_one_line(runner, inputs_dir, tmp_path, which, formula):
    """A [field] kind = "expression" whose E(t) (or A(t), or E = -dA/dt) is not finite at a time
    of its duration: one line naming the key, exit 2 (1/t had run to exit 0 with NaN rows; 1/0
    had been a ZeroDivisionError's traceback)."""
    text = Path(tiny(inputs_dir)).read_text().replace(
        "[initial]", f'[field]\nkind = "expression"\n{which} = "{formula}"\nduration = 1.0\n\n[initial]')
    p = tmp_path / "field.toml"
    p.write_text(text)
    r = runner.invoke(main, ["run", str(p), "--out", str(tmp_path / "o"), "-q", "--set", "time.t_end=0.05"])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    lines = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and f"field.{which} = " in lines[0] and "not finite" in lines[0], r.output


@pytest.mark.parametrize("args, key", [
    (["converge", "TINY", "--target", "inf"], "--target = inf"),
    (["converge", "TINY", "--box", "nan", "--force"], "--box = nan"),            # (had been a traceback)
    (["floquet", "TINY", "--steps", "100000000000"], "--steps = 100000000000"),  # (745 GiB of steps)
    (["floquet", "TINY", "--period", "1e300"], "--period = 1e+300")])            # (a ValueError)
def test_study_options_out_of_range_are_one_line(runner, inputs_dir, tmp_path, args, key):
    """The studies' numeric options refuse nan, inf and sizes past the run's own limits in one
    line naming the option, exit 2, before any work."""
    args = [tiny(inputs_dir) if a == "TINY" else a for a in args] + ["--out", str(tmp_path)]
    r = runner.invoke(main, args)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    lines = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and key in lines[0], r.output


def test_spectrum_gamma_out_of_range_is_one_line(runner, inputs_dir, tmp_path):
    """tdse spectrum --kind photoelectron --gamma: nan and 1e300 are one line naming --gamma,
    exit 2 (arange's and pow's errors, one a traceback); a gamma within the range runs."""
    r = runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(tmp_path), "-q"])
    assert r.exit_code == 0, r.output
    h5 = str(tmp_path / "tiny.h5")
    for g in ("nan", "1e300"):
        r = runner.invoke(main, ["spectrum", h5, "--kind", "photoelectron", "--gamma", g, "--force"])
        assert r.exit_code == 2 and "Traceback" not in r.output and f"--gamma = {float(g)!r}" in r.output, r.output
    r = runner.invoke(main, ["spectrum", h5, "--kind", "photoelectron", "--gamma", "0.05", "--force"])
    assert r.exit_code == 0, r.output


def test_an_unreachable_scheduler_is_one_line(monkeypatch):
    """workers.connect: Dask's OSError for a --scheduler it cannot reach is one line naming
    the address (Client stubbed to fail as Dask does after its connect timeout)."""
    from tdse.config import ConfigError
    from tdse.studies import workers
    dask_distributed = pytest.importorskip("dask.distributed")

    def refuse(*a, **k):
        raise OSError("Timed out trying to connect to tcp://127.0.0.1:1 after 30 s")
    monkeypatch.setattr(dask_distributed, "Client", refuse)
    with pytest.raises(ConfigError, match=r"--scheduler = 'tcp://127.0.0.1:1': cannot be reached"):
        workers.connect("tcp://127.0.0.1:1", "tcp://127.0.0.1:1")
    with pytest.raises(OSError):                    # (a cluster of this process's: Dask's own)
        workers.connect(object())


def test_missing_and_non_toml_files(runner, tmp_path):
    r = runner.invoke(main, ["run", str(tmp_path / "none.toml")])
    assert r.exit_code == 2 and "no such file" in r.output
    p = tmp_path / "x.toml"
    p.write_text("this is [not toml")
    r = runner.invoke(main, ["states", str(p)])
    assert r.exit_code == 2 and "not valid TOML" in r.output


def test_taylor_refusal_allow_inaccurate_and_force(runner, inputs_dir, tmp_path):
    """--allow-inaccurate runs a refused Taylor step; --force only overwrites (split)."""
    text = Path(os.path.join(inputs_dir, "thesis_fig6.toml")).read_text()
    text = text.replace("dt = 0.002", "dt = 0.01").replace("t_end = 10.0", "t_end = 0.02")
    p = tmp_path / "fast.toml"
    p.write_text(text)
    r = runner.invoke(main, ["run", str(p), "--out", str(tmp_path)])
    assert r.exit_code == 2 and "largest dt that passes" in r.output and "--allow-inaccurate" in r.output
    r = runner.invoke(main, ["run", str(p), "--out", str(tmp_path), "--force", "--no-plots"])
    assert r.exit_code == 2 and "largest dt that passes" in r.output  # --force does not override
    r = runner.invoke(main, ["run", str(p), "--out", str(tmp_path), "--allow-inaccurate", "--no-plots"])
    assert r.exit_code == 0, r.output
    with h5py.File(tmp_path / "thesis_fig6.h5") as f:
        assert f.attrs["allow_inaccurate"]
    r = runner.invoke(main, ["run", str(p), "--out", str(tmp_path), "--allow-inaccurate", "--no-plots"])
    assert r.exit_code == 2 and "exists" in r.output  # --allow-inaccurate does not overwrite


def test_plot_rejects_foreign_h5(runner, tmp_path):
    p = tmp_path / "other.h5"
    with h5py.File(p, "w") as f:
        f["x"] = np.arange(3)
    r = runner.invoke(main, ["plot", str(p)])
    assert r.exit_code == 2 and "not a tdse run file" in r.output
    q = tmp_path / "junk.h5"
    q.write_bytes(b"not hdf5 at all")
    r = runner.invoke(main, ["plot", str(q)])
    assert r.exit_code == 2


def test_plot_command_redraws(runner, inputs_dir, tmp_path):
    runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(tmp_path), "--no-plots"])
    r = runner.invoke(main, ["plot", str(tmp_path / "tiny.h5"), "--out", str(tmp_path / "p")])
    assert r.exit_code == 0 and (tmp_path / "p" / "tiny_spacetime.png").exists()
    # #58 item 2: as every other command, plot refuses to overwrite without --force
    before = (tmp_path / "p" / "tiny_drift.png").read_bytes()
    r = runner.invoke(main, ["plot", str(tmp_path / "tiny.h5"), "--out", str(tmp_path / "p")])
    assert r.exit_code == 2 and "--force" in r.output and r.output.count("\n") == 1, r.output
    assert (tmp_path / "p" / "tiny_drift.png").read_bytes() == before
    r = runner.invoke(main, ["plot", str(tmp_path / "tiny.h5"), "--out", str(tmp_path / "p"), "--force"])
    assert r.exit_code == 0, r.output


UNWRITABLE = "/proc/tdse-out"        # not writable for root either (os.access says it is)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
@pytest.mark.parametrize("command", [
    ["run", "{tiny}", "--no-plots"],
    ["scan", "{tiny}", "--set", "potential.a=0.5,0.6"],
    ["converge", "{tiny}", "--levels", "2"],
    ["floquet", "{tiny}", "--steps", "20"],
    ["plot", "{h5}"],
    ["spectrum", "{h5}", "--kind", "autocorrelation"],
    ["animate", "{h5}"],
])
def test_every_command_refuses_an_unwritable_out_before_any_work(command, runner, inputs_dir,
                                                                 tmp_path, monkeypatch):
    """#58 items 2 and 6: a folder that cannot be written (here under /proc) is one line
    naming --out and "not writable", exit 2, before any work (the studies' entry points
    fail the test if reached) -- scan and converge computed everything first."""
    from tdse.studies import converge, scan
    from tdse.run import driver
    h5 = tmp_path / "tiny.h5"
    if "{h5}" in command:
        assert runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(tmp_path),
                                    "--no-plots", "-q"]).exit_code == 0
    for mod, name in ((scan, "run_batch"), (converge, "study"), (driver, "run")):
        monkeypatch.setattr(mod, name, lambda *a, **k: pytest.fail("work started"))
    args = [a.format(tiny=tiny(inputs_dir), h5=h5) for a in command]
    out = UNWRITABLE + "/x.gif" if command[0] == "animate" else UNWRITABLE
    r = runner.invoke(main, args + ["--out", out])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "--out" in lines[0] and "not writable" in lines[0], r.output
    assert "Traceback" not in r.output


def test_animate_makes_its_out_folder(runner, inputs_dir, tmp_path):
    """#58 item 2: `tdse animate --out missing/x.gif` makes the folder (it was a traceback)."""
    runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(tmp_path), "--no-plots", "-q"])
    gif = tmp_path / "missing" / "x.gif"
    r = runner.invoke(main, ["animate", str(tmp_path / "tiny.h5"), "--out", str(gif), "--fps", "30"])
    assert r.exit_code == 0, r.output
    assert gif.stat().st_size > 1000


def test_bad_devices_and_missing_cupy_backend(runner, inputs_dir, tmp_path):
    r = runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(tmp_path), "--devices", "a,b"])
    assert r.exit_code == 2 and "--devices" in r.output
    from mgemm.arrays import gpu_count
    if gpu_count() == 0:
        r = runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(tmp_path), "--backend", "cupy"])
        assert r.exit_code == 2 and "--backend" in r.output and "Traceback" not in r.output


def test_run_that_cannot_fit_its_exponent_is_one_line_exit_2(runner, inputs_dir, tmp_path, monkeypatch):
    """#23 item 5: when the dense exponent refuses for memory (mgemm.expm.ExpmMemoryError,
    raised before its allocations), `tdse run` says it in one line with what it needs and
    exits 2, no traceback."""
    import mgemm
    from mgemm.expm import ExpmMemoryError

    def refuse(*a, **k):
        raise ExpmMemoryError("mgemm.expm: N = 64 needs 9.00 GiB on each of 1 device(s) (...); "
                              "1.00 GiB are free; the largest N that fits (with its input) is 21")
    monkeypatch.setattr(mgemm, "expm", refuse)
    src = Path(tiny(inputs_dir)).read_text().replace('method = "auto"', 'method = "dense"')
    assert 'method = "dense"' in src
    inp = tmp_path / "tiny.toml"
    inp.write_text(src)
    r = runner.invoke(main, ["run", str(inp), "--out", str(tmp_path / "o"), "--backend", "numpy",
                             "--no-plots"])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    line = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert len(line) == 1 and "largest N that fits (with its input) is 21" in line[0]


def test_spectrum_prints_paths_as_they_were_given(runner, inputs_dir, tmp_path, monkeypatch):
    """#58 item 6: `tdse spectrum FILE` writes beside FILE and prints the paths relative or
    absolute as FILE and --out were given (it printed absolute paths without --out and
    relative ones with it)."""
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(main, ["run", tiny(inputs_dir), "--out", "runs", "--no-plots", "-q"]).exit_code == 0
    r = runner.invoke(main, ["spectrum", "runs/tiny.h5", "--kind", "autocorrelation"])
    assert r.exit_code == 0 and "wrote runs/tiny_spectrum_autocorrelation.json, " in r.output, r.output
    r = runner.invoke(main, ["spectrum", "runs/tiny.h5", "--kind", "autocorrelation", "--out", "sp"])
    assert r.exit_code == 0 and "wrote sp/tiny_spectrum_autocorrelation.json, " in r.output, r.output
    absolute = str(tmp_path / "runs" / "tiny.h5")
    r = runner.invoke(main, ["spectrum", absolute, "--kind", "autocorrelation", "--force"])
    assert r.exit_code == 0 and f"wrote {tmp_path / 'runs'}/tiny_spectrum" in r.output, r.output


def test_the_yield_line_says_what_it_is_worth(inputs_dir):
    """#58 item 7: a yield within the exponentials' own norm error (tolerance x exponentials)
    is said to be unresolved (weak-field runs printed -1e-8 as a yield); the line says which
    observables are divided by the remaining norm and that the populations and <n> are not."""
    import types
    from tdse import config as cfgmod
    from tdse.ui.lines import yield_lines
    cfg = cfgmod.load(os.path.join(inputs_dir, "atom_hhg.toml")).with_value("propagator.tolerance", 1e-10)
    for y, unresolved in ((-1e-8, True), (2e-8, True), (0.0567, False)):
        obs = {"t": np.array([0.0, 441.0]), "yield": np.array([0.0, y]),
               "yield_flux": np.array([0.0, y]), "layer_norm": np.array([0.0, 0.0])}
        line, = yield_lines(cfg, types.SimpleNamespace(observables=obs, exponentials=8820))
        assert ("not resolved" in line) == unresolved and ("9e-07" in line) == unresolved, line
        assert "the populations and <n> are not" in line


def test_a_run_prints_its_wall_and_where_it_went(runner, inputs_dir, tmp_path):
    """#58 item 10: the last line of `tdse run --plots` is the process's wall split into the
    time before the run, the run and its file, and the pictures -- the three add up to it."""
    import re
    r = runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(tmp_path), "--backend", "numpy",
                             "--plots"])
    assert r.exit_code == 0, r.output
    last = r.output.strip().splitlines()[-1]
    m = re.match(r"wall ([\d.]+) s: ([\d.]+) s before the run .*, ([\d.]+) s the run and its file, "
                 r"([\d.]+) s the pictures$", last)
    assert m, last
    wall, before, run_, plots = map(float, m.groups())
    # (tenths of a second: the tiny run in a warm process can print 0.0 -- CI at c2f10cc)
    assert abs(before + run_ + plots - wall) <= 0.15 and run_ >= 0 and plots > 0


def test_the_command_reference_is_generated_from_the_commands():
    """docs/CLI.md is the commands' own help (tdse.ui.reference), every command in it."""
    import os
    from tdse.ui.cli import main as group
    from tdse.ui.reference import cli_reference
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = Path(os.path.join(root, "docs", "CLI.md")).read_text()
    assert text == cli_reference(), "run: python -m tdse.ui.reference > docs/CLI.md"
    assert all(f"## `tdse {name}`" in text for name in group.commands)


@pytest.mark.parametrize("command", [
    ["converge", "{tiny}", "--levels", "2"],
    ["floquet", "{tiny}", "--steps", "20"],
    ["spectrum", "{h5}", "--kind", "autocorrelation"],
])
def test_a_command_refuses_an_out_without_room_for_its_outputs_before_any_work(
        command, runner, inputs_dir, tmp_path, monkeypatch):
    """#58 item 2: a command that writes a JSON and a PNG checks the free space for them (1
    MiB: files.OUTPUTS_BYTES) up front: with 100 KiB free, one line naming --out, what it
    needs and what is free, exit 2, nothing written and no work started."""
    import collections
    from tdse.run import resources
    from tdse.studies import converge, floquet
    h5 = tmp_path / "tiny.h5"
    if "{h5}" in command:
        assert runner.invoke(main, ["run", tiny(inputs_dir), "--out", str(tmp_path),
                                    "--no-plots", "-q"]).exit_code == 0
    for mod, name in ((converge, "study"), (floquet, "analyse")):
        monkeypatch.setattr(mod, name, lambda *a, **k: pytest.fail("work started"))
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(resources.shutil, "disk_usage", lambda p: usage(1 << 30, 1 << 30, 100 << 10))
    out = tmp_path / "out"
    r = runner.invoke(main, [a.format(tiny=tiny(inputs_dir), h5=h5) for a in command] + ["--out", str(out)])
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert "--out" in lines[0] and "needs about 1.0 MiB" in lines[0] and "100 KiB are free" in lines[0]
    assert not out.exists() or not os.listdir(out)


def _fresh(code):
    """``code`` run by a fresh interpreter in the repository: its status 0, else its stderr."""
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_cli_leaves_numpys_unused_submodules_unloaded_until_used():
    """The command line registers numpy.f2py and numpy.testing as lazily loaded modules
    (tdse.lazy): importing it and then scipy.linalg (whose array-API clone of NumPy
    names them) runs neither's code; using them then works.  The look-ahead's worker
    start (tdse.run.ahead_child) likewise.  In fresh interpreters."""
    _fresh(
        "import sys\n"
        "import tdse.ui.cli, scipy.linalg\n"
        "assert 'numpy.f2py.crackfortran' not in sys.modules, 'f2py loaded'\n"
        "assert 'numpy.testing._private.utils' not in sys.modules, 'testing loaded'\n"
        "import numpy\n"
        "numpy.testing.assert_allclose([1.0, 2.0], [1.0, 2.0])\n"
        "from numpy.f2py import crackfortran\n"
        "assert 'numpy.testing._private.utils' in sys.modules and crackfortran.__name__\n")
    # numpy.char and numpy.ctypeslib likewise (and numpy.rec): named by the clone, unused by a run
    _fresh(
        "import sys\n"
        "import tdse.ui.cli, scipy.linalg\n"
        "assert 'numpy._core.defchararray' not in sys.modules, 'char loaded'\n"
        "assert 'numpy.ctypeslib._ctypeslib' not in sys.modules, 'ctypeslib loaded'\n"
        "import numpy\n"
        "assert list(numpy.char.upper(['ab'])) == ['AB'] and numpy.ctypeslib.as_array\n"
        "assert numpy.rec.fromarrays([[1, 2]]).shape == (2,)\n")
    # the look-ahead's worker process likewise (its start imports the solvers: scipy.linalg)
    _fresh("import sys\nfrom tdse.run import ahead_child\nahead_child.start(1)\n"
           "assert 'scipy.linalg' in sys.modules\n"
           "assert 'numpy.f2py.crackfortran' not in sys.modules, 'f2py loaded'\n")


def test_the_command_ends_without_the_interpreters_teardown_keeping_its_status_and_output(tmp_path):
    """`tdse` ends by os._exit once its work and every other exit function are done
    (tdse.ui.command._end_now): an object whose finalizer would run in the interpreter's
    teardown is not finalized; the status (0, 2), stdout and stderr are the command's.  Not
    where an HDF5 file is still open (HDF5's own exit closes it) or where the command
    raised: Python's own exit then."""
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import atexit, sys\n"
            "from tdse.ui import command\n"
            "class Late:\n"
            "    def __del__(self):\n"
            "        print('teardown', flush=True)\n"
            "late = Late()\n"
            # an exit function registered during the command (the look-ahead's, multiprocessing's)
            "from tdse.run import interrupts\n"
            "accept = interrupts.accept_sigint\n"
            "def accept_sigint(**k):\n"
            "    atexit.register(lambda: print('exit function', flush=True))\n"
            "    accept(**k)\n"
            "interrupts.accept_sigint = accept_sigint\n"
            "OPEN\n"
            "sys.argv = ['tdse'] + sys.argv[1:]\n"
            "command.main()\n")

    def tdse(*args, opened=""):
        return subprocess.run([sys.executable, "-c", code.replace("OPEN", opened), *args],
                              capture_output=True, text=True, cwd=root)
    r = tdse("--version")
    assert r.returncode == 0 and "version" in r.stdout and "exit function" in r.stdout
    assert "teardown" not in r.stdout
    r = tdse("run", "inputs/no_such.toml")
    assert r.returncode == 2 and "no such file" in r.stderr and "teardown" not in r.stdout
    # an HDF5 file open at the end: Python's exit, which finalizes
    opened = f"import h5py\nf = h5py.File({str(tmp_path / 'x.h5')!r}, 'w')"
    r = tdse("--version", opened=opened)
    assert r.returncode == 0 and "teardown" in r.stdout


def test_the_look_ahead_starts_its_workers_before_the_solvers_are_imported():
    """tdse.run.eigenpairs.look_ahead (the CLI's, before the run is prepared) spawns its
    workers before this process imports SciPy: on 2 CPUs their ~0.8 s of imports had begun
    only after the run's own (tdse.run.driver), and the loop computed its pairs itself
    meanwhile (workers_early_cpu2_20261202T0545.txt) -- "on", and "auto"'s decision for the
    DVR.  In a fresh interpreter."""
    _fresh(
        "import sys\n"
        "from tdse import config as cfgmod\n"
        "from tdse.run.eigenpairs import look_ahead\n"
        "cfg = cfgmod.load('inputs/h2plus_moving.toml').with_value('run.eigen_workers', 'on')\n"
        "with look_ahead(cfg, 'numpy', prime=False) as w:\n"
        "    assert w is not None and 'scipy' not in sys.modules, sorted(m for m in sys.modules if 'scipy' in m)[:5]\n"
        "    assert w.ready.result(timeout=120)\n")
    # "auto" decides by the pairs' cost guess, which for the DVR reads the dense solver's
    # largest N: deciding imports no solver either (it had: the DVR's workers then started
    # after SciPy's ~0.2-0.3 s of imports)
    _fresh(
        "import sys\n"
        "from tdse import config as cfgmod\n"
        "from tdse.run.eigenpairs import look_ahead, seconds_guess\n"
        "cfg = cfgmod.load('inputs/h2plus_moving.toml').with_value('output.populations_every', 1)\n"
        "assert cfg.grid.stencil == 'dvr' and cfg.run.eigen_workers == 'auto'\n"
        "assert seconds_guess(cfg) > 0 and 'scipy' not in sys.modules\n"
        "with look_ahead(cfg, 'numpy', prime=False) as w:\n"
        "    assert 'scipy' not in sys.modules, sorted(m for m in sys.modules if 'scipy' in m)[:5]\n")


def test_api_devices_must_be_integer_ids_on_any_machine():
    """tdse.simulate's ``devices`` is checked where no GPU would use it too: a string (whose
    characters had been taken for ids -- a TypeError on a GPU machine) or a float is one
    ConfigError naming --devices; integers pass, and where the run is on the CPU a warning
    says they are not used (they had been dropped silently)."""
    import warnings

    from tdse.config import ConfigError
    from tdse.run.backend import resolve_backend
    for bad in ("0,1", [0.5], 3):
        with pytest.raises(ConfigError, match="--devices"):
            resolve_backend("auto", bad)
    with pytest.warns(RuntimeWarning, match=r"--devices = \[0, 1\]: .* not used"):
        assert resolve_backend("numpy", [0, 1])[0] == "numpy"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_backend("numpy", None)[0] == resolve_backend("numpy", [])[0] == "numpy"


@pytest.mark.parametrize("command", ["floquet", "spectrum", "animate", "converge"])
def test_an_existing_output_is_refused_before_matplotlib_is_imported(tmp_path, command):
    """floquet, spectrum, animate and converge check their outputs before importing their plotting
    (matplotlib: ~1.5 s on 2 CPUs -- a refusal had taken 1.6-2.6 s against 0.4 now)."""
    out = tmp_path / "o"
    out.mkdir()
    h5 = str(tmp_path / "tiny.h5")
    code = f"""
import os, sys
from click.testing import CliRunner
from tdse.ui.cli import main
r = CliRunner()
assert r.invoke(main, ["run", "inputs/tiny.toml", "--out", {str(tmp_path)!r}, "-q"]).exit_code == 0
for k in [m for m in sys.modules if m.startswith("matplotlib")]:
    del sys.modules[k]
args = {{"floquet": ["floquet", "inputs/tiny.toml", "--out", {str(out)!r}],
        "spectrum": ["spectrum", {h5!r}, "--out", {str(out)!r}],
        "animate": ["animate", {h5!r}, "--out", {str(out / "a.gif")!r}],
        "converge": ["converge", "inputs/tiny.toml", "--out", {str(out)!r}]}}[{command!r}]
name = {{"floquet": "tiny_floquet.json", "spectrum": "tiny_spectrum_hhg.json", "animate": "a.gif",
        "converge": "tiny_converge.json"}}[{command!r}]
open(os.path.join({str(out)!r}, name), "w").close()
res = r.invoke(main, args)
assert res.exit_code == 2 and "exists" in res.output, res.output
assert "matplotlib" not in sys.modules, "imported before the refusal"
"""
    _fresh(code)
