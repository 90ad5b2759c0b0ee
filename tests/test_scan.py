"""Parameter scans (#26): members equal their serial runs, batches on Dask workers equal the
in-process scan and survive a killed worker, an interrupted scan resumes from its finished
batches, the file is read by xarray with named dimensions."""
from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import time

import numpy as np
import pytest
from click.testing import CliRunner

import tdse
from tdse.studies.spectra import hhg
from tdse.studies import scan as scan_mod
from tdse.ui.cli import main

ATOM = """
name = "atom"
[grid]
x_min = -20.0
x_max = 20.0
dx = 0.4
stencil = "dvr"
[potential]
a = 2.0
[[potential.centres]]
x0 = 0.0
Z = 1.0
[field]
E0 = 0.05
omega = 0.3
duration = 20.0
[absorber]
width = 6.0
[time]
dt = 0.1
t_end = 20.0
[propagator]
method = "chebyshev"
tolerance = 1e-12
time_error = "none"
[output]
every = 50
"""
NAMES = ("norm", "energy", "x_mean", "p_mean", "acceleration", "acceleration_normalised",
         "autocorrelation", "populations_h0", "yield_flux", "layer_norm", "field")


@pytest.fixture(scope="module")
def base():
    return tdse.config.loads(ATOM)


@pytest.fixture(scope="module")
def grid_scan(base):
    return scan_mod.scan(base, {"field.E0": [0.02, 0.05, 0.08], "potential.a": [1.5, 2.0]})


@pytest.mark.parametrize("i, j", [(0, 0), (1, 1), (2, 0)])
def test_each_member_equals_its_serial_run(base, grid_scan, i, j):
    sc = grid_scan["scan"]
    cfg = base.with_value("field.E0", sc.axes[0][1][i]).with_value("potential.a", sc.axes[1][1][j])
    serial = tdse.simulate(cfg, backend="numpy").observables
    assert np.allclose(grid_scan["t"], serial["t"])
    for name in NAMES:
        got, ref = grid_scan[name][i, j], serial[name]
        assert np.abs(got - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max()), name


def test_each_batch_says_its_blas_threads(grid_scan):
    """A scan records the BLAS threads each batch ran with (one per batch, at least one; a
    CPU block takes the CPUs free of other processes, at most this process's)."""
    th = grid_scan["batch_blas_threads"]
    assert len(th) == grid_scan["batches"] == len(grid_scan["batch_seconds"])
    assert all(1 <= t <= len(os.sched_getaffinity(0)) for t in th)


def test_zip_and_lists_and_bad_sets(base):
    res = scan_mod.scan(base, [scan_mod.parse_set("field.E0=0.02,0.05"),
                               scan_mod.parse_set("field.omega=0.3:0.4:2")], zipped=True)
    assert res["scan"].shape == (2,) and res["norm"].shape == (2, len(res["t"]))
    for bad in ("field.E0", "field.E0=1:2", "field.E0=a,b", "=1,2", "field.E0=1:2:1"):
        with pytest.raises(tdse.config.ConfigError, match="--set"):
            scan_mod.parse_set(bad)
    with pytest.raises(tdse.config.ConfigError, match="field.E0"):
        scan_mod.members(base, [("field.E0", [0.1, float("nan")])])
    with pytest.raises(tdse.config.ConfigError, match="nope"):
        scan_mod.members(base, [("grid.nope", [1.0])])
    # #58 items 6 and 7: string values say why; a time axis that differs is refused in
    # one line (it was `ValueError: shape mismatch` after the work)
    with pytest.raises(tdse.config.ConfigError, match=r"values are numbers .* run each of 3, dvr "
                       r"with `tdse run INPUT --set grid.stencil=VALUE`"):
        scan_mod.parse_set("grid.stencil=3,dvr")
    dt = base.time.dt
    for key, vals in (("time.dt", [dt, dt / 2]), ("time.t_end", [base.time.t_end, 2 * base.time.t_end])):
        with pytest.raises(tdse.config.ConfigError, match=rf"^{key} = .*changes the members' time axis"):
            scan_mod.members(base, [("field.E0", [0.01, 0.02]), (key, vals)])


@pytest.mark.slow
def test_two_dask_workers_equal_the_in_process_scan_and_survive_a_killed_worker(base, tmp_path,
                                                                               monkeypatch):
    import time
    # (a nanny writes its pre-spawn environment into this process, where the next inherits it)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    base = base.with_value("time.t_end", 120.0).with_value("field.duration", 120.0)
    sets = {"field.E0": list(np.linspace(0.02, 0.08, 6))}
    here = scan_mod.scan(base, sets, batch=2)
    killed, settings = [], []

    def kill_one(client):   # a worker dies while it computes a batch
        import dask
        from tdse.run.backend import usable_cpus
        settings.extend(client.run(lambda: (dask.config.get("distributed.worker.profile.enabled"),
                                            dask.config.get("distributed.admin.tick.interval"),
                                            usable_cpus(),
                                            os.environ.get("MALLOC_TRIM_THRESHOLD_"))).values())
        for _ in range(500):
            busy = {w: ts for w, ts in client.processing().items() if ts}
            if busy:
                break
            time.sleep(0.01)
        addr, tasks = next(iter(busy.items()))
        pid = client.run(os.getpid, workers=[addr])[addr]
        os.kill(pid, signal.SIGKILL)
        killed.append((pid, list(tasks)))
    env = dict(os.environ)
    there = scan_mod.scan(base, sets, batch=2, workers=2, out=str(tmp_path), on_submit=kill_one)
    assert killed and killed[0][1] and there["batches"] == 3   # it held a batch when it died
    # the nannies' OMP_NUM_THREADS = 1 (written into this process's environment) undone
    assert dict(os.environ) == env
    # the workers run without Dask's profiler and its 20 ms tick and without the nanny's
    # heap trimming, their BLAS held to the nanny's OMP_NUM_THREADS = 1
    assert settings == [(False, "1s", 1, None), (False, "1s", 1, None)]
    for name in NAMES:
        assert np.array_equal(here[name], there[name]), name


def test_worker_yaml_gives_a_worker_started_by_hand_the_scans_configuration(tmp_path):
    """DASK_CONFIG=FILE with :func:`worker_yaml`: a fresh process reads every key of
    WORKER_CONFIG, and its nanny would start a worker without MALLOC_TRIM_THRESHOLD_."""
    import json
    import subprocess
    import sys
    f = tmp_path / "tdse-workers.yaml"
    f.write_text(scan_mod.worker_yaml())
    code = ("import dask, distributed, json; from distributed.nanny import _get_env_variables; "
            f"print(json.dumps([[dask.config.get(k) for k in {list(scan_mod.WORKER_CONFIG)!r}], "
            "_get_env_variables('distributed.nanny.pre-spawn-environ')]))")
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    out = subprocess.run([sys.executable, "-c", code], env={**env, "DASK_CONFIG": str(f)},
                         capture_output=True, text=True, check=True).stdout
    values, spawn_env = json.loads(out)
    assert values == list(scan_mod.WORKER_CONFIG.values())
    assert "MALLOC_TRIM_THRESHOLD_" not in spawn_env and spawn_env["OMP_NUM_THREADS"] == "1"


def test_a_worker_that_sees_the_parts_folder_writes_its_batch_there(base, tmp_path):
    """batch_task: with the client's token in the folder the batch is written there and only
    its number travels back; with another token (a worker on another file system) the
    observables travel back and nothing is written."""
    cfgs = [base.with_value("field.E0", e) for e in (0.03, 0.07)]
    folder = str(tmp_path / "p")
    token = scan_mod._mark(folder)
    small = scan_mod.batch_task(cfgs, "numpy", None, False, (folder, 3, "fp", token))
    assert set(small) == {"part", "seconds", "write_seconds"} and small["part"] == 3
    part = scan_mod._load_part(folder, 3, "fp")
    ref = scan_mod.run_batch(cfgs)
    for name in NAMES:
        assert np.array_equal(part[name], ref[name]), name
    full = scan_mod.batch_task(cfgs, "numpy", None, False, (folder, 4, "fp", "another"))
    assert np.array_equal(full["acceleration"], ref["acceleration"])
    assert not os.path.exists(os.path.join(folder, "batch_00004"))


@pytest.mark.slow
def test_dask_workers_on_this_machine_write_their_parts_and_send_none(base, tmp_path):
    base = base.with_value("time.t_end", 5.0)
    sc = scan_mod.members(base, {"field.E0": [0.02, 0.04, 0.06, 0.08]})
    groups = scan_mod.batches(sc, 2)
    fps = [scan_mod._fingerprint(sc, g) for g in groups]
    folder = str(tmp_path / "atom_scan.parts")
    got = dict(scan_mod._execute(sc, groups, [0, 1], 2, None, "numpy", None, False, None,
                                 folder, fps))
    small = {"part", "seconds", "write_seconds"}
    assert {k: set(v) for k, v in got.items()} == {0: small, 1: small}
    # the LocalCluster it started is closed with the scan: none of its processes is left
    t0 = time.time()
    while multiprocessing.active_children() and time.time() - t0 < 10:
        time.sleep(0.1)
    assert not multiprocessing.active_children()
    here = scan_mod.scan(base, {"field.E0": [0.02, 0.04, 0.06, 0.08]}, batch=2)
    for k, g in enumerate(groups):
        part = scan_mod._load_part(folder, k, fps[k])
        assert np.array_equal(part["acceleration"], here["acceleration"][g]), k


def _dies_on_second(monkeypatch):
    """run_batch that raises KeyboardInterrupt at its second call; returns its call count."""
    calls = {"n": 0}
    orig = scan_mod.run_batch

    def dies_on_second(*a, **k):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return orig(*a, **k)
    monkeypatch.setattr(scan_mod, "run_batch", dies_on_second)
    return calls


def test_an_interrupted_scan_resumes_from_its_finished_batches(base, tmp_path, monkeypatch):
    sets = {"field.E0": [0.02, 0.04, 0.06, 0.08]}
    calls = _dies_on_second(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        scan_mod.scan(base, sets, batch=2, out=str(tmp_path))
    parts = sorted(os.listdir(tmp_path / "atom_scan.parts"))
    assert parts == ["batch_00000"]
    calls["n"] = 10                                   # no more failures
    res = scan_mod.scan(base, sets, batch=2, out=str(tmp_path))
    assert calls["n"] == 11                           # only the missing batch ran
    full = scan_mod.scan(base, sets, batch=2)
    assert np.array_equal(res["acceleration"], full["acceleration"])
    calls["n"] = 20                                   # the parts lack the final psi: run again
    kept = scan_mod.scan(base, sets, batch=2, out=str(tmp_path), keep_psi=True)
    assert calls["n"] == 22 and kept["psi"].shape == (4, base.grid.n)


def test_an_interrupted_cli_scan_says_what_it_kept(tmp_path, monkeypatch):
    """#58 item 6: SIGINT during `tdse scan` (here the second batch's KeyboardInterrupt) is
    one line, exit 130, saying how many finished batches were kept, where, and that the
    same command continues from them."""
    _dies_on_second(monkeypatch)
    p = tmp_path / "atom.toml"
    p.write_text(ATOM)
    r = CliRunner().invoke(main, ["scan", str(p), "--set", "field.E0=0.02,0.04,0.06,0.08",
                                  "--batch", "2", "--out", str(tmp_path), "-q"])
    assert r.exit_code == 130, r.output
    line = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(line) == 1 and line[0].startswith("error: interrupted by SIGINT: 1 finished batch(es) "
                                                 f"kept in {tmp_path / 'atom_scan.parts'}"), r.output
    assert "the same command continues from them" in line[0]


def test_cli_writes_a_file_xarray_reads_with_named_dimensions(tmp_path):
    """The CLI's file read by xarray: by default (--save final) each observable at t_end over
    the keys, the harmonic spectra; with --save series:NAMES those over time too, on "t".
    Members read back at their own coordinates equal their own serial runs (at t_end, and
    over time where saved)."""
    import xarray as xr
    p = tmp_path / "atom.toml"
    p.write_text(ATOM)
    named = ["norm", "x_mean", "acceleration", "yield_flux", "populations_h0"]
    base = tdse.config.loads(ATOM)
    for save in ("final", "series:" + ",".join(named)):
        out = tmp_path / save.split(":")[0]
        r = CliRunner().invoke(main, ["scan", str(p), "--set", "field.E0=0.02:0.06:3", "--set",
                                      "potential.a=1.5,2.0", "--out", str(out), "-q"]
                               + (["--plots"] if save == "final" else ["--save", save]))
        assert r.exit_code == 0, r.output
        assert not (out / "atom_scan.parts").exists()     # #58 item 6: gone once written
        ds = xr.open_dataset(out / "atom_scan.h5", engine="h5netcdf")
        assert ds.attrs["save"] == save
        over = ("t",) if save != "final" else ()
        assert ds["yield_flux"].dims == ("field.E0", "potential.a") + over
        assert ds["populations_h0"].dims == ("field.E0", "potential.a") + over + ("state",)
        assert ds["energy"].dims == ("field.E0", "potential.a")      # not named: at t_end
        assert ds["hhg_power"].dims[:2] == ("field.E0", "potential.a")
        assert np.allclose(ds["field.E0"].values, [0.02, 0.04, 0.06])
        assert ds["field.E0"].attrs["units"] == "E_h/(e bohr)" and ds["t"].attrs["units"] == "hbar/E_h"
        if save == "final":         # drawn with --plots; else on request, by `tdse plot`
            assert (out / "atom_scan.png").stat().st_size > 10_000
        else:
            assert not (out / "atom_scan.png").exists() and "tdse plot" in r.output
            r = CliRunner().invoke(main, ["plot", str(out / "atom_scan.h5")])
            assert r.exit_code == 0 and (out / "atom_scan.png").stat().st_size > 10_000, r.output
            r = CliRunner().invoke(main, ["plot", str(out / "atom_scan.h5")])      # exists: refused
            assert r.exit_code == 2 and "--force" in r.output, r.output
        # #58 item 7b: members read back from the file at their own coordinates against their
        # own serial runs (rows written in another order than the keys' scales fail here)
        for i, j in ((2, 0), (0, 1)):
            e0, a = float(ds["field.E0"].values[i]), float(ds["potential.a"].values[j])
            one = tdse.simulate(base.with_value("field.E0", e0).with_value("potential.a", a), backend="numpy")
            got = ds.sel({"field.E0": e0, "potential.a": a})
            assert np.allclose(got["t"].values, one.observables["t"])
            sl = slice(None) if over else -1
            for k in named[:-1] + ["energy"]:
                want = one.observables[k][-1 if k == "energy" else sl]
                assert np.abs(got[k].values - want).max() < 1e-8, (k, i, j, save)
            assert np.abs(got["populations_h0"].values - one.observables["populations_h0"][sl, :4]).max() < 1e-8
            # the batch's spectra (one FFT) against the member's own (hhg of its own run)
            own = hhg(one.observables["t"], one.observables["acceleration"], base.potential.field.omega)
            assert np.allclose(got["hhg_order"].values, own["order"], rtol=1e-12, atol=0)
            assert np.abs(got["hhg_power"].values - own["power"]).max() < 1e-8 * max(own["power"])
    r = CliRunner().invoke(main, ["scan", str(p), "--set", "field.E0=0.02:x:3", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "--set" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["scan", str(p), "--set", "field.E0=0.02:0.06:3", "--save", "series:nrm",
                                  "--out", str(tmp_path / "bad")])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "--save = 'series:nrm'" in r.output
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())


def test_a_zipped_scan_file_holds_each_member_along_member(tmp_path):
    """--zip: the file's /member scale with each key's values along it (units, labels), and
    each member read back at its index against its own serial run (#58 item 7b)."""
    import h5py
    import xarray as xr
    p = tmp_path / "atom.toml"
    p.write_text(ATOM)
    r = CliRunner().invoke(main, ["scan", str(p), "--zip", "--set", "field.E0=0.03,0.07", "--set",
                                  "potential.a=2.0,1.5", "--out", str(tmp_path), "-q", "--save", "series"])
    assert r.exit_code == 0, r.output
    with h5py.File(tmp_path / "atom_scan.h5") as f:
        assert f.attrs["zipped"] and list(f["member"][:]) == [0, 1]
        assert f["member"].attrs["units"] == "1" and "member" in f["member"].attrs["description"]
        assert f["field.E0"].attrs["units"] == "E_h/(e bohr)" and f["potential.a"].attrs["units"] == "bohr^2"
        assert "each member" in f["field.E0"].attrs["description"]
        assert f["field.E0"].dims[0][0].name == "/member"
    ds = xr.open_dataset(tmp_path / "atom_scan.h5", engine="h5netcdf")
    assert ds["norm"].dims == ("member", "t")
    base = tdse.config.loads(ATOM)
    for m in (0, 1):
        e0, a = float(ds["field.E0"].values[m]), float(ds["potential.a"].values[m])
        assert (e0, a) == ((0.03, 2.0), (0.07, 1.5))[m]
        one = tdse.simulate(base.with_value("field.E0", e0).with_value("potential.a", a), backend="numpy")
        for k in ("norm", "x_mean", "yield_flux"):
            assert np.abs(ds[k].values[m] - one.observables[k]).max() < 1e-8, (k, m)


def test_a_scans_stated_errors_are_said_as_a_range_with_nan_members_counted_apart(tmp_path, monkeypatch):
    """`tdse scan` of an input with the estimate prints the members' time errors at t_end as
    a range of the finite ones, a member whose row is NaN counted apart (its min and max had
    printed "nan to nan")."""
    import tdse.run.scanfile as scanfile
    p = tmp_path / "atom.toml"
    p.write_text(ATOM.replace('time_error = "none"', 'time_error = "estimate"'))
    args = ["scan", str(p), "--set", "field.E0=0.03,0.05,0.07", "-q"]
    r = CliRunner().invoke(main, args + ["--out", str(tmp_path / "a")])
    assert r.exit_code == 0, r.output
    line = next(s for s in r.output.splitlines() if s.startswith("time-discretisation error"))
    lo, hi = (float(v) for v in line.split(": ")[1].split(";")[0].split(" to "))
    assert 0 < lo <= hi and "NaN" not in line
    real = scanfile.final

    def one_nan(res, name):              # a member whose time_error rows are NaN
        v = np.array(real(res, name), dtype=float)
        if name == "time_error":
            v[1] = np.nan
        return v
    monkeypatch.setattr(scanfile, "final", one_nan)
    r = CliRunner().invoke(main, args + ["--out", str(tmp_path / "b")])
    assert r.exit_code == 0, r.output
    line = next(s for s in r.output.splitlines() if s.startswith("time-discretisation error"))
    assert "nan" not in line and ", 1 member(s) NaN;" in line, line
    lo2, hi2 = (float(v) for v in line.split(": ")[1].split(",")[0].split(" to "))
    assert lo <= lo2 <= hi2 <= hi                     # the other two members' range


def test_a_scan_file_with_the_final_psi_and_its_attributes(tmp_path):
    """--keep-psi: /psi_final over the keys and /x (bohr), each member's equal to its own
    serial run's last psi; the file's attributes (format, version, keys, batches) (#58 item
    7b: mutants of scanfile.write's psi branch and attributes survived the suite)."""
    import h5py
    import json
    import xarray as xr
    p = tmp_path / "atom.toml"
    p.write_text(ATOM)
    r = CliRunner().invoke(main, ["scan", str(p), "--set", "field.E0=0.03,0.07", "--keep-psi", "--batch", "1",
                                  "--out", str(tmp_path), "-q"])
    assert r.exit_code == 0, r.output
    with h5py.File(tmp_path / "atom_scan.h5") as f:
        assert f.attrs["format"] == "tdse-scan/2" and f.attrs["version"] == tdse.__version__
        assert f.attrs["save"] == "final" and json.loads(f.attrs["saved_series"]) == []
        assert json.loads(f.attrs["keys"]) == ["field.E0"] and int(f.attrs["batches"]) == 2
        assert f["x"].attrs["units"] == "bohr" and f["psi_final"].attrs["units"] == "bohr^-1/2"
        assert f.attrs["created"].endswith("+00:00") and float(f.attrs["seconds"]) > 0
        assert f.attrs["units"] == "atomic units (hbar = m_e = e = 1)"
        assert list(f["state"][:]) == [0, 1, 2, 3] and f["state"].attrs["units"] == "1"
        assert f["hhg_power"].attrs["units"] == "a.u." and f["hhg_order"].attrs["units"] == "1"
    ds = xr.open_dataset(tmp_path / "atom_scan.h5", engine="h5netcdf")
    assert ds["psi_final"].dims == ("field.E0", "x")
    from tdse.run.scanfile import read
    with pytest.raises(ValueError, match="not a tdse scan file .format 'tdse-h2plus/2'"):
        read(tdse.simulate(tdse.config.loads(ATOM).with_value("time.t_end", 1.0), out=str(tmp_path / "run")).path)
    base = tdse.config.loads(ATOM)
    for i, e0 in enumerate(ds["field.E0"].values):
        one = tdse.simulate(base.with_value("field.E0", float(e0)), backend="numpy")
        assert np.allclose(ds["x"].values, one.x)
        assert np.abs(ds["psi_final"].values[i] - one.psi[-1]).max() < 1e-8


def test_host_fields_are_total_and_gradient(base):
    """BatchPotential.host_fields (a block of observables' V and dV/dx from one pass a
    centre) equals total and gradient: moving centres with ramps and fields, each member at
    its own time, and still centres (the molecule's part kept: later calls, a changed
    result, give the same numbers)."""
    from tdse.model.grid import points
    from tdse.model.potential import BatchPotential
    rng = np.random.default_rng()
    pots = [base.with_value("field.E0", e).with_value("potential.centres.amplitude", 0.3 * k + 0.1)
            .with_value("potential.centres.frequency", 1.0 + k).with_value("potential.centres.ramp", 2.0 * k)
            .potential for k, e in enumerate(rng.uniform(0.01, 0.1, 3))]
    x = points(base.grid)
    still = [dataclasses.replace(p, centres=tuple(dataclasses.replace(c, amplitude=0.0)
                                                  for c in p.centres)) for p in pots]
    for members in (pots, still):
        bp = BatchPotential(members, x)
        for t in [0.0, *rng.uniform(0, 20, 3), rng.uniform(0, 20, 3), 0.0]:
            V, G = bp.host_fields(t)
            assert np.allclose(V, bp.total(t), rtol=1e-14, atol=1e-14)
            assert np.allclose(G, bp.gradient(t), rtol=1e-13, atol=1e-13)
            assert np.ptp(G, axis=0).min() > 1e-2   # the centres' forces (the field is uniform)
            V += 1.0
            G += 1.0


def test_batch_potential_is_the_members_own(base):
    """The vectorised potential, gradient, field and centres equal each member's own."""
    from tdse.model.grid import points
    from tdse.model.potential import BatchPotential, field_value, gradient, total
    pots = [base.with_value("field.E0", e).with_value("potential.centres.amplitude", 0.3 * k)
            .with_value("potential.centres.frequency", 1.0 + k).with_value("potential.centres.ramp", 2.0 * k)
            .potential for k, e in enumerate([0.01, 0.05, 0.09])]
    x = points(base.grid)
    bp = BatchPotential(pots, x)
    for t in (0.0, 0.7, 3.3, 19.9):
        V, G = bp.total(t), bp.gradient(t)
        for b, p in enumerate(pots):
            assert np.allclose(V[:, b], total(p, x, t), rtol=0, atol=1e-14)
            assert np.allclose(G[:, b], gradient(p, x, t), rtol=0, atol=1e-14)
            assert bp.field(t)[b] == pytest.approx(field_value(p.field, t), abs=1e-16)
    # centres that do not move: the molecule's part is kept from the first call, the same
    # numbers bit for bit (a new array each call: changing one leaves the next alone)
    still = [dataclasses.replace(p, centres=tuple(dataclasses.replace(c, amplitude=0.0)
                                                  for c in p.centres)) for p in pots]
    fixed, fresh = BatchPotential(still, x), None
    for t in (0.0, 3.3, 19.9, 3.3):
        V = fixed.total(t)
        fresh = BatchPotential(still, x).total(t)          # a new instance's first call
        assert np.array_equal(V, fresh)
        for b, p in enumerate(still):
            assert np.allclose(V[:, b], total(p, x, t), rtol=0, atol=1e-14)
        V += 1.0
    # the bounds of a cfm4 generator (one weight negative) contain every member's values
    from tdse.numerics.schemes import get
    sch = get("cfm4")
    for t in (0.0, 2.5, 9.9):
        times = sch.times(t, 0.3)
        for row in sch.factors + ((-1.0, 0.1),):   # and a weight whose sign matters
            V = sum(w * bp.total(tj) for w, tj in zip(row, times))
            lo, hi = bp.bounds(times, row)
            assert lo <= V.min() and V.max() <= hi
            assert hi - lo <= (V.max() - V.min()) + 0.5 + 2 * 20.0 * 0.09   # walls + field ends


def test_members_sharing_a_molecule_share_its_states_and_match_serial_runs(base):
    """An E0 scan: one molecular H(0) for every member (solved once, populations by one
    GEMM); each member still equals its serial run."""
    from tdse.model import states
    calls = {"n": 0}
    orig = states.eigenstates

    def counting(*a, **k):
        calls["n"] += 1
        return orig(*a, **k)
    import pytest as _pt
    mp = _pt.MonkeyPatch()
    mp.setattr(states, "eigenstates", counting)
    try:
        res = scan_mod.scan(base, {"field.E0": [0.03, 0.07]})
    finally:
        mp.undo()
    assert calls["n"] == 1
    serial = tdse.simulate(base.with_value("field.E0", 0.07), backend="numpy").observables
    for name in ("populations_h0", "acceleration", "yield_flux"):
        assert np.abs(res[name][1] - serial[name]).max() <= 1e-10 * max(1.0, np.abs(serial[name]).max())


def test_gpu_workers_need_dask_cuda_and_say_so_before_any_work(base):
    try:
        import dask_cuda  # noqa: F401
        pytest.skip("dask-cuda is installed here")
    except ImportError:
        pass
    with pytest.raises(tdse.config.ConfigError, match="dask-cuda"):
        scan_mod.scan(base, {"field.E0": [0.02, 0.03]}, workers=2, backend="cupy")


@pytest.mark.parametrize("where", [{"workers": 2}, {"scheduler": "tcp://127.0.0.1:1"}])
def test_a_scan_across_processes_without_dask_says_so_before_any_work(base, where, monkeypatch):
    """#58 item 11: Dask is the ``cluster`` extra; without it --workers / --scheduler are one
    line naming the option and the extra, before any member runs; the in-process scan needs
    no Dask (its members equal their serial runs: test_scan_members_equal_serial_runs)."""
    import sys
    monkeypatch.setitem(sys.modules, "dask", None)          # `import dask` fails
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    run_batch = scan_mod.run_batch
    monkeypatch.setattr(scan_mod, "run_batch", lambda *a, **k: pytest.fail("work started"))
    option = "--workers" if "workers" in where else "--scheduler"
    with pytest.raises(tdse.config.ConfigError, match=rf"^{option} = 'given': .*\[cluster\]"):
        scan_mod.scan(base, {"field.E0": [0.02, 0.03]}, **where)
    monkeypatch.setattr(scan_mod, "run_batch", run_batch)     # in this process: no Dask asked
    short = base.with_value("time.t_end", 4 * base.time.dt)
    res = scan_mod.scan(short, {"field.E0": [0.02, 0.03]})
    assert res["batches"] == 1 and np.isfinite(res["norm"]).all() and res["norm"].shape[0] == 2


def test_batch_size_follows_the_memory(base):
    sc = scan_mod.members(base, {"field.E0": list(np.linspace(0.01, 0.1, 10))})
    n, K = base.grid.n, base.output.populations
    per_member = 16 * n * 12 + 8 * n * (K + 4)
    assert scan_mod.batch_limit(base, 3 * per_member + 1) == 3
    groups = scan_mod.batches(sc, memory=3 * per_member + 1)
    assert [len(g) for g in groups] == [3, 3, 3, 1]
    assert sorted(i for g in groups for i in g) == list(range(10))


@pytest.mark.parametrize("absorber", [True, False])
def test_the_scan_map_labels_each_key_in_its_unit_and_shows_physics_without_an_absorber(
        absorber, tmp_path, monkeypatch):
    """#58 item 13: a scan over field.intensity labels its axis in W/cm^2 (the values as given),
    not "atomic units"; without an absorber (1 - norm is the exponentials' rounding there) the
    map shows 1 - P_0 -- what left H(0)'s ground state -- instead of a "yield"."""
    from tdse.ui import plots
    text = ATOM if absorber else ATOM.replace("[absorber]\nwidth = 6.0\n", "")
    p = tmp_path / "atom.toml"
    p.write_text(text)
    figs = []
    real = plots.plt.close
    monkeypatch.setattr(plots.plt, "close", lambda fig=None: figs.append(fig))
    r = CliRunner().invoke(main, ["scan", str(p), "--set", "field.intensity=1e13,1e14",
                                  "--out", str(tmp_path), "-q", "--plots"])
    assert r.exit_code == 0, r.output
    labels = [ax.get_ylabel() for ax in figs[-1].axes] + [ax.get_xlabel() for ax in figs[-1].axes]
    assert "field.intensity (W/cm^2)" in labels and not any("atomic units)" in s for s in labels)
    assert ("1 - P_0(t_end)" in labels) == (not absorber) and ("yield" in labels) == absorber
    real(figs[-1])


def test_a_scan_that_cannot_fit_its_disk_refuses_before_any_work(tmp_path, monkeypatch):
    """#58 item 2: `tdse scan` checks the free space for its estimate (scan_bytes: the file and
    its parts folder while it runs) up front -- one line naming --out, what it needs and what
    is free, exit 2, no member run; the estimate bounds what a scan writes (its file, and its
    parts folder before removal, together)."""
    import shutil
    from tdse.run import resources
    p = tmp_path / "atom.toml"
    p.write_text(ATOM)
    sets = ["--set", "field.E0=0.02,0.04,0.06"]
    sc = scan_mod.members(tdse.config.loads(ATOM), [scan_mod.parse_set(sets[1])])
    need = scan_mod.scan_bytes(sc, series=())          # the CLI's default: --save final
    real = shutil.disk_usage
    monkeypatch.setattr(resources.shutil, "disk_usage",
                        lambda path: real(path)._replace(free=need - 1))
    monkeypatch.setattr(scan_mod, "run_batch", lambda *a, **k: pytest.fail("work started"))
    r = CliRunner().invoke(main, ["scan", str(p), *sets, "--out", str(tmp_path / "o"), "-q"])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --out = ") and "the scan" in lines[0]
    assert "free there" in lines[0]
    monkeypatch.undo()
    from tdse.run.scanfile import SERIES, write
    for save, series in (("final", ()), ("series", SERIES)):
        out = tmp_path / save
        res = scan_mod.scan(tdse.config.loads(ATOM), [scan_mod.parse_set(sets[1])], out=str(out), save=save)
        parts = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
        write(str(out / "atom_scan.h5"), res, scan_mod.spectra(res))
        written = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
        bound = scan_mod.scan_bytes(sc, series=series)
        assert parts > 0 and written <= bound, (save, parts, written, bound)


def test_a_scans_harmonic_spectra_are_each_members_own_and_none_when_omega_is_scanned(base):
    """#58 7b: a member's harmonic spectrum in a scan is the spectrum of its own serial run's
    acceleration against the field's omega (given by a wavelength here: the run's omega is
    derived from it), member by member to 1e-8 of its peak; where the scan changes the
    wavelength (or omega) each member would need its own order axis: no spectrum, rather
    than one against the base input's omega."""
    from tdse.studies import spectra as spectra_mod
    text = ATOM.replace("omega = 0.3", "wavelength = 400.0")
    cfg = tdse.config.loads(text)
    omega = 45.5633525 / 400.0
    assert abs(cfg.potential.field.omega - omega) < 1e-6 * omega
    E0s = [0.03, 0.07]
    res = scan_mod.scan(cfg, {"field.E0": E0s})
    spec = scan_mod.spectra(res)
    assert spec["power"].shape[0] == len(E0s)
    for i, e0 in enumerate(E0s):
        run = tdse.simulate(cfg.with_value("field.E0", e0), backend="numpy")
        own = spectra_mod.hhg(run.observables["t"], run.observables["acceleration"], cfg.potential.field.omega)
        P = np.asarray(own["power"])
        assert np.allclose(spec["order"], own["order"], rtol=1e-12, atol=0)
        assert np.abs(spec["power"][i] - P).max() <= 1e-8 * P.max(), e0
    assert not np.allclose(spec["power"][0], spec["power"][1])
    for key, values in (("field.wavelength", [400.0, 500.0]), ("field.omega", [0.1, 0.12])):
        other = text if key == "field.wavelength" else ATOM
        assert scan_mod.spectra(scan_mod.scan(tdse.config.loads(other), {key: values})) is None, key


def test_the_cli_makes_its_members_once(tmp_path, monkeypatch):
    """`tdse scan` checks every member's config before any work and hands that Scan to
    tdse.studies.scan.scan, which does not make them again (1000 atom_hhg members: 0.1-0.2 s
    a time); the file holds what a scan of the sets themselves gives (to rounding)."""
    import xarray as xr
    p = tmp_path / "atom.toml"
    p.write_text(ATOM)
    made = []
    members = scan_mod.members
    monkeypatch.setattr(scan_mod, "members", lambda *a, **k: made.append(1) or members(*a, **k))
    r = CliRunner().invoke(main, ["scan", str(p), "--set", "field.E0=0.02:0.06:3", "--out",
                                  str(tmp_path / "o"), "-q"])
    assert r.exit_code == 0, r.output
    assert len(made) == 1
    monkeypatch.undo()
    ds = xr.open_dataset(tmp_path / "o" / "atom_scan.h5", engine="h5netcdf")
    res = scan_mod.scan(tdse.config.loads(ATOM), [("field.E0", list(ds["field.E0"].values))], save="final")
    for k in ("norm", "energy", "x_mean"):       # (the CLI's BLAS threads may round otherwise)
        assert np.allclose(ds[k].values, res[k], rtol=1e-12, atol=1e-14), k


def test_a_batch_keeps_whole_only_the_series_its_scan_keeps(base):
    """#59 item 1: a batch assembles the whole time series only of the observables its scan
    keeps (and the acceleration, where it makes spectra); the others' last row alone -- the
    same values at t_end, the same spectra, as the scan that keeps every series."""
    cfg = tdse.config.loads(ATOM)
    E0s = [0.03, 0.05, 0.07]
    final, series = (scan_mod.scan(cfg, {"field.E0": E0s}, save=s) for s in ("final", "series"))
    assert final["saved_series"] == () and final["hhg_power"].shape[0] == len(E0s)
    assert np.array_equal(final["hhg_power"], series["hhg_power"])
    for name in ("energy", "acceleration", "norm", "populations_h0", "autocorrelation"):
        assert np.asarray(series[name]).shape[1] > 1
        assert np.array_equal(final[name], np.asarray(series[name])[:, -1]), name
    configs = [cfg.with_value("field.E0", e) for e in E0s]
    cols = scan_mod.run_batch(configs, full={"acceleration"})
    S = cols["t"].size
    assert cols["acceleration"].shape == (3, S) and cols["energy"].shape == (3, 1)
    assert cols["populations_h0"].shape[:2] == (3, 1)
    assert np.array_equal(cols["energy"][:, 0], scan_mod.run_batch(configs)["energy"][:, -1])
