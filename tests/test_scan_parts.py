"""A scan's parts one by one (#58 7b: what the whole-scan tests of test_scan.py leave open,
found by mutating tdse/studies/scan.py): what --set accepts and how it refuses, word for
word; a batch's size from the memory; the parts folder's fingerprints and marks; a batch
as a Dask task keeping psi; the one-line refusals without Dask or dask-cuda."""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tdse
from tdse.config import ConfigError
from tdse.studies import scan as scan_mod

from test_scan import ATOM

USAGE = "must be KEY=a:b:n (2 <= n <= 100000 values from a to b, a and b finite) or KEY=v1,v2,..."


@pytest.fixture(scope="module")
def base():
    """test_scan's atom, 20 steps."""
    return tdse.config.loads(ATOM).with_value("time.t_end", 2.0)


def refusal(text):
    with pytest.raises(ConfigError) as e:
        scan_mod.parse_set(text)
    return str(e.value)


def test_set_values_and_their_refusals_word_for_word():
    """a:b:n gives n values, n from 2 to 100000, a and b finite; a list gives its numbers,
    each finite, none empty; a text value is refused with what to run instead; anything
    else with the usage, naming --set and the text as given."""
    assert scan_mod.parse_set(" field.E0 =0:1:3") == ("field.E0", [0.0, 0.5, 1.0])
    key, vals = scan_mod.parse_set("field.E0=0:1:100000")
    assert key == "field.E0" and len(vals) == 100000
    assert scan_mod.parse_set("field.E0=0.1,0.2") == ("field.E0", [0.1, 0.2])
    for bad in ("field.E0", "=1,2", "field.E0=", "field.E0=0:1:100001", "field.E0=0:1:1",
                "field.E0=nan:1:3", "field.E0=0:inf:3", "field.E0=1,,2", "field.E0=1,inf"):
        assert refusal(bad) == f"--set = {bad!r}: {USAGE}", bad
    assert refusal("grid.stencil=3,dvr") == (
        "--set = 'grid.stencil=3,dvr': a scan's values are numbers (one batch runs one grid and "
        "scheme); run each of 3, dvr with `tdse run INPUT --set grid.stencil=VALUE`")
    assert refusal("field.E0=0.1=0.2").startswith("--set = 'field.E0=0.1=0.2': a scan's values")


def test_a_batch_holds_what_the_memory_allows(base, monkeypatch):
    """batch_limit: about 12 complex N-blocks and K + 4 real N-vectors a member
    (16 N 12 + 8 N (K + 4) bytes), at least one member; by default half the memory
    available."""
    n, K = base.grid.n, base.output.populations
    per = 16 * n * 12 + 8 * n * (K + 4)
    assert scan_mod.batch_limit(base, 3 * per) == 3
    assert scan_mod.batch_limit(base, 3 * per - 1) == 2
    assert scan_mod.batch_limit(base, per - 1) == 1
    monkeypatch.setattr(tdse.config, "available_memory", lambda: 10 * per)
    assert scan_mod.batch_limit(base) == 5


def test_parts_are_told_apart_and_a_missing_mark_is_not_seen(base, tmp_path):
    """Each batch's fingerprint is its members' own (a resumed scan never takes another
    batch's part); a folder without the client's mark (another machine's file system) is
    not seen; marking an existing folder again gives a new token."""
    sc = scan_mod.members(base, {"field.E0": [0.02, 0.04, 0.06, 0.08]})
    groups = scan_mod.batches(sc, 2)
    fps = [scan_mod._fingerprint(sc, g) for g in groups]
    assert len(groups) == 2 and fps[0] != fps[1]
    other = scan_mod.members(base, {"field.E0": [0.02, 0.04, 0.06, 0.09]})
    assert scan_mod._fingerprint(other, groups[1]) != fps[1] and scan_mod._fingerprint(other, groups[0]) == fps[0]
    # what a part keeps (--save) is part of its fingerprint: a scan saving otherwise runs it again
    assert scan_mod._fingerprint(sc, groups[0], ()) != fps[0] != scan_mod._fingerprint(sc, groups[0], ("norm",))
    folder = str(tmp_path / "p")
    assert not scan_mod._sees(folder, "0" * 16)
    first = scan_mod._mark(folder)
    second = scan_mod._mark(folder)
    assert first != second and scan_mod._sees(folder, second) and not scan_mod._sees(folder, first)


def test_a_batch_task_keeps_psi_when_asked_and_times_its_write(base, tmp_path):
    """batch_task with keep_psi: the members' final psi, the same bits as run_batch's; with
    the parts folder, its write's seconds (a duration, not a clock reading)."""
    cfgs = [base.with_value("field.E0", e) for e in (0.03, 0.07)]
    got = scan_mod.batch_task(cfgs, "numpy", None, True)
    ref = scan_mod.run_batch(cfgs, keep_psi=True)
    assert np.array_equal(got["psi"], ref["psi"]) and got["psi"].shape == (2, base.grid.n)
    folder = str(tmp_path / "p")
    token = scan_mod._mark(folder)
    t0 = time.perf_counter()
    small = scan_mod.batch_task(cfgs, "numpy", None, False, (folder, 0, "fp", token))
    assert 0 <= small["write_seconds"] <= time.perf_counter() - t0


def test_a_plain_scan_has_no_tsurff_momenta(base):
    """Without [output] tsurff_radius a scan's result holds no t-SURFF momentum grid."""
    res = scan_mod.scan(base, {"field.E0": [0.02, 0.03]})
    assert "tsurff_k" not in res and res["batches"] == len(res["batch_seconds"]) == 1


def test_the_refusals_without_dask_or_dask_cuda_word_for_word(base, monkeypatch):
    """One line each, before any work: what to install, and what runs without it."""
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    monkeypatch.setitem(sys.modules, "dask_cuda", None)
    monkeypatch.setattr(scan_mod, "run_batch", lambda *a, **k: pytest.fail("work started"))
    with pytest.raises(ConfigError) as e:
        scan_mod.scan(base, {"field.E0": [0.02, 0.03]}, workers=2)
    assert str(e.value) == ("--workers = 'given': a scan across processes needs Dask (pip install -e "
                            "\".[cluster]\"); without it the scan runs in this process (no --workers, "
                            "no --scheduler)")
    with pytest.raises(ConfigError) as e:
        scan_mod.need_dask_cuda()
    assert str(e.value) == ("--workers = 'with --backend cupy': one worker per GPU needs dask-cuda "
                            "(pip install -e \".[cuda-cluster]\"); or run in this process on one GPU "
                            "(no --workers)")


def test_the_disk_estimate_bounds_a_long_scan_and_is_not_far_above_it(tmp_path):
    """scan_bytes against what a 6-member, 1001-row scan writes (its parts folder and its
    file, together): a bound, and within 20 % of it beyond the 256 KiB kept for metadata
    (measured 1.15 at 2001 rows; a refusal should not ask for much more than it needs)."""
    import os

    from tdse.run.scanfile import write
    cfg = tdse.config.loads(ATOM).with_value("time.t_end", 100.0)
    sets = {"field.E0": [0.01 * (i + 1) for i in range(6)]}
    need = scan_mod.scan_bytes(scan_mod.members(cfg, sets))
    res = scan_mod.scan(cfg, sets, out=str(tmp_path))
    write(str(tmp_path / "atom_scan.h5"), res, scan_mod.spectra(res))
    written = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(tmp_path) for f in fs)
    assert written > 4 * (1 << 18)
    assert written <= need <= 1.2 * written + (1 << 18), (written, need)


def test_the_parts_folder_counts_only_whole_batches_and_tolerates_what_is_missing(tmp_path):
    """parts_kept counts the batch_* folders only (not the mark, other folders or a file
    named like a batch); a scan without a parts folder has kept none, and removing it is
    no error; a batch written over a leftover half-written folder of this process replaces
    it."""
    import os
    out, name = str(tmp_path), "atom"
    folder, count = scan_mod.parts_kept(out, name)
    assert count == 0 and not os.path.exists(folder)
    scan_mod.remove_parts(out, name)                          # nothing there: no error
    scan_mod._mark(folder)
    res = {"norm": np.linspace(1.0, 0.9, 5)}
    stale = os.path.join(folder, f"batch_00001.tmp{os.getpid()}")
    os.makedirs(stale)
    open(os.path.join(stale, "junk.npy"), "w").close()
    scan_mod._save_part(folder, 1, "fp", res)
    os.makedirs(os.path.join(folder, "other"))
    open(os.path.join(folder, "batch_notes"), "w").close()
    assert scan_mod.parts_kept(out, name) == (folder, 1)
    assert sorted(os.listdir(os.path.join(folder, "batch_00001"))) == ["fingerprint", "norm.npy"]
    assert np.array_equal(scan_mod._load_part(folder, 1, "fp")["norm"], res["norm"])
    scan_mod.remove_parts(out, name)
    assert not os.path.exists(folder)


def test_a_one_member_scan_has_its_harmonic_spectrum(base):
    """spectra of a scan of one member: its order axis and one power row."""
    res = scan_mod.scan(base, {"field.E0": [0.04]})
    sp = scan_mod.spectra(res)
    assert sp["power"].shape == (1, len(sp["order"])) and np.all(np.diff(sp["order"]) > 0)


def _each_member_is_its_own_run(res, sc, names=("norm", "energy", "x_mean", "acceleration",
                                                 "populations_h0")):
    """Every member's rows in the scan's result against its own serial run (tdse.simulate of
    the member's config): to 1e-9 (batched Chebyshev terms against a run's own, at 1e-12)."""
    for i, cfg in enumerate(sc.configs):
        serial = tdse.simulate(cfg, backend="numpy").observables
        at = np.unravel_index(i, sc.shape)
        for k in names:
            got, want = np.asarray(res[k])[at], np.asarray(serial[k])
            assert got.shape == want.shape and np.abs(got - want).max() <= 1e-9 * max(1.0, np.abs(want).max()), (i, k)


def test_members_on_different_grids_go_to_their_own_batches_and_equal_their_runs(base):
    """#58 7b: members whose grid differs (a stencil, a box: another N) cannot share a batch
    (scan._signature): each batch holds one signature and no member is lost, each member
    equal to its own run (a signature that dropped the stencil or merged the groups, or a
    batches() that kept only its last group, ran them on one grid or lost them)."""
    sets = {"grid.stencil": [3, 5], "grid.x_max": [20.0, 22.0]}
    sc = scan_mod.members(base, sets)
    groups = scan_mod.batches(sc)
    assert sorted(i for g in groups for i in g) == list(range(4)) and len(groups) == 4
    assert len({scan_mod._signature(c) for c in sc.configs}) == 4
    _each_member_is_its_own_run(scan_mod.scan(base, sets), sc)


def test_members_with_different_envelopes_go_to_their_own_batches(base):
    """#58 7b: a scan over the field's envelope (the API takes string values; the CLI's
    --set scans numbers only): one envelope a batch (the batch's potential takes one kind),
    each member its own run's."""
    sets = {"field.envelope": ["sin2", "gaussian"]}
    sc = scan_mod.members(base, sets)
    assert sorted(scan_mod.batches(sc)) == [[0], [1]]
    _each_member_is_its_own_run(scan_mod.scan(base, sets), sc)


def test_a_scan_without_a_field_runs_each_member_as_its_own_run(inputs_dir):
    """A field-free input (tiny: moving centres, no [field]) scanned over the soft-core a:
    one batch (one signature), each member its own run's."""
    import os
    cfg = tdse.load_config(os.path.join(inputs_dir, "tiny.toml")).with_value(
        "propagator.method", "chebyshev").with_value("time.t_end", 0.2)
    sets = {"potential.a": [0.5, 0.6]}
    sc = scan_mod.members(cfg, sets)
    assert cfg.potential.field is None and scan_mod.batches(sc) == [[0, 1]]
    _each_member_is_its_own_run(scan_mod.scan(cfg, sets), sc, ("norm", "energy", "x_mean"))


def test_the_assembly_places_each_batch_in_its_rows_and_keeps_its_timings(base, monkeypatch):
    """_Assembly (the client's side of a scan): batches placed in any order land in their
    members' rows; each batch's own seconds, BLAS threads, set-up, collection and Chebyshev
    terms kept as the batch reported them (and its members counted); the placing's own time summed over the batches (under a clock
    that ticks once a call: one tick a batch)."""
    import itertools
    sc = scan_mod.members(base, {"field.E0": [0.01, 0.02, 0.03]})
    groups = [[0, 2], [1]]
    from tdse.studies.scan_save import SERIES, reduce_batch, spectra_of
    res = {k: reduce_batch(scan_mod.run_batch([sc.configs[i] for i in g]), SERIES, spectra_of(sc))
           for k, g in enumerate(groups)}
    ticks = itertools.count()
    monkeypatch.setattr(scan_mod.time, "perf_counter", lambda: float(next(ticks)))
    whole = scan_mod._Assembly(sc, groups, keep_psi=False)
    for k in (1, 0):
        whole.place(k, res[k])
    monkeypatch.undo()
    assert whole.seconds == 2.0
    out = whole.result()
    for k, g in enumerate(groups):
        for j, i in enumerate(g):
            assert np.array_equal(out["norm"][i], res[k]["norm"][j])
        assert whole.meta[k] == {key: float(res[k][key]) for key in
                                 ("seconds", "blas_threads", "setup_seconds", "collect_seconds",
                                  "chebyshev_terms")}
        assert 0 < res[k]["setup_seconds"] < 60 and 0 <= res[k]["collect_seconds"] < 60
    assert out["batch_blas_threads"] == [int(res[k]["blas_threads"]) for k in (0, 1)]
    assert out["batch_members"] == [2, 1]
    assert out["batch_chebyshev_terms"] == [int(res[k]["chebyshev_terms"]) for k in (0, 1)]
    assert min(out["batch_chebyshev_terms"]) > 0
    assert min(out["batch_blas_threads"]) >= 1 and out["batches"] == 2


def test_a_scan_steps_psi_by_chebyshev_whatever_the_input_asks(inputs_dir):
    """run_batch steps each batch's psi by the block Chebyshev series, with no time-error
    run and no U(t): tiny at N = 65536 asking for the dense exponent and U(t) (and, by its
    default, the estimate) -- which prepare refuses (the dense matrices: hundreds of GiB) --
    scans, each member equal to its own run of psi by Chebyshev without a time error."""
    import os
    text = (Path(os.path.join(inputs_dir, "tiny.toml")).read_text()
            .replace("x_min = -6.4", "x_min = -3276.8").replace("x_max = 6.4", "x_max = 3276.8")
            .replace("dx = 0.2", "dx = 0.1").replace("t_end = 1.0", "t_end = 0.01")
            .replace('method = "auto"', 'method = "dense"\noperator = true'))
    cfg = tdse.config.loads(text)
    assert cfg.grid.n == 65536 and cfg.propagator.time_error == "estimate"
    with pytest.raises(ConfigError, match="dense"):
        tdse.prepare(cfg, backend="numpy")
    sets = {"potential.a": [0.5, 0.6]}
    sc = scan_mod.members(cfg, sets)
    res = scan_mod.scan(cfg, sets)
    for i, c in enumerate(sc.configs):
        c = c.with_value("propagator.operator", False).with_value("propagator.method", "chebyshev") \
             .with_value("propagator.time_error", "none")
        serial = tdse.simulate(c, backend="numpy").observables
        for k in ("norm", "energy", "x_mean"):
            assert np.abs(res[k][i] - serial[k]).max() <= 1e-9 * max(1.0, np.abs(serial[k]).max()), (i, k)


def test_a_cpu_block_takes_the_usable_cpus_and_a_one_member_batch_keeps_no_psi(base, monkeypatch):
    """run_batch on the CPU: a block of 2+ members runs its BLAS-3 products on the CPUs this
    process may use (run.backend.usable_cpus, here made 3), a one-member batch with the
    plan's default; without keep_psi no final psi is returned."""
    from tdse.run import backend as be
    monkeypatch.setattr(be, "usable_cpus", lambda: 3)
    sc = scan_mod.members(base.with_value("time.t_end", 0.5), {"field.E0": [0.01, 0.02]})
    two, one = scan_mod.run_batch(sc.configs), scan_mod.run_batch(sc.configs[:1])
    assert two["blas_threads"] == 3 and one["blas_threads"] != 3
    assert "psi" not in two and "psi" not in one
    # the work done, as a batch reports it: its exponentials, their terms, its loop's seconds
    assert two["exponentials"] > 0 and two["chebyshev_terms"] >= 2 * two["exponentials"]
    assert 0 < two["seconds"] < 60
    assert scan_mod.run_batch(sc.configs[:1], keep_psi=True)["psi"].shape == (1, base.grid.n)


@pytest.mark.parametrize("initial", [{"initial.state": 3, "output.populations": 2},
                                     {"initial.state": "gaussian", "initial.x0": 2.0,
                                      "initial.sigma": 1.0, "initial.k0": 0.5}])
def test_members_start_where_their_input_says(base, initial):
    """A scan's members start from their input's initial state: an eigenstate beyond the
    populations kept (state 3, populations 2: the batch solves 4 states and keeps 2 for
    the populations) or a Gaussian packet on the grid; each member its own run's, the
    populations included."""
    cfg = base.with_value("time.t_end", 0.5)
    for k, v in initial.items():
        cfg = cfg.with_value(k, v)
    sets = {"field.E0": [0.01, 0.03]}
    sc = scan_mod.members(cfg, sets)
    _each_member_is_its_own_run(scan_mod.scan(cfg, sets), sc)


def test_members_with_one_molecular_h0_share_its_eigenstates(inputs_dir, monkeypatch):
    """Members whose H(0) is the same (here centres that oscillate at other frequencies:
    the same positions at t = 0) share one solve of its eigenstates (prepare's); members
    whose centres start elsewhere get their own (scan._molecule)."""
    import os
    cfg = tdse.load_config(os.path.join(inputs_dir, "tiny.toml")).with_value(
        "propagator.method", "chebyshev").with_value("time.t_end", 0.05)
    calls = []
    solve = scan_mod.states.eigenstates
    monkeypatch.setattr(scan_mod.states, "eigenstates", lambda c, t, k: calls.append(t) or solve(c, t, k))
    same = scan_mod.members(cfg, {"potential.centres.frequency": [2.0, 3.0, 4.0]})
    scan_mod.run_batch(same.configs)
    assert calls == [0.0]                   # prepare's, for all three
    moved = scan_mod.members(cfg, {"potential.centres.x0": [-1.0, -1.2]})
    scan_mod.run_batch(moved.configs)
    assert calls == [0.0] * 3               # prepare's, and the second member's own


def test_a_scan_shows_its_batches_on_a_bar_only_when_asked_and_times_its_phases(base, capsys):
    """tdse.scan(progress=True): a tqdm bar named after the input counting batches (3 of 3);
    without it (the API's default) no bar.  The result says where the scan's time went: the
    members' making and the placing within the scan's seconds, one set-up and one
    collection a batch."""
    sets = {"field.E0": [0.01, 0.02, 0.03]}
    res = scan_mod.scan(base, sets, batch=1, progress=True)
    err = capsys.readouterr().err
    assert "scan atom" in err and "3/3" in err and re.search(r"\dbatch/s|s/batch", err), err
    quiet = scan_mod.scan(base, sets, batch=1)
    assert "scan atom" not in capsys.readouterr().err
    for r in (res, quiet):
        ph = r["phases"]
        assert 0 < ph["members_seconds"] < r["seconds"] and 0 < ph["place_seconds"] < r["seconds"]
        assert len(ph["batch_setup_seconds"]) == len(ph["batch_collect_seconds"]) == r["batches"] == 3
        assert np.all(np.isfinite(ph["batch_setup_seconds"])) and ph["worker_write_seconds"] == []
        assert np.all(np.isfinite(ph["batch_collect_seconds"])) and 0 < r["seconds"] < 60


@pytest.mark.parametrize("option, value", [("workers", 2), ("scheduler", "tcp://127.0.0.1:1")])
def test_a_nuclei_scan_refuses_other_processes_in_one_line(inputs_dir, option, value):
    """A [nuclei] input's scan runs in this process on one device: tdse.scan hands it
    --workers and --scheduler, which it refuses before any work, naming the option."""
    import os
    cfg = tdse.load_config(os.path.join(inputs_dir, "h2plus_nuclei.toml"))
    with pytest.raises(ConfigError, match=f"--{option}"):
        scan_mod.scan(cfg, {"field.E0": [0.01, 0.02]}, **{option: value})


@pytest.mark.parametrize("sets, zipped, line", [
    ({}, False, "--set = None: give at least one KEY=a:b:n"),
    ({"field.E0": [0.01, 0.02], "field.omega": [0.2, 0.3, 0.4]}, True,
     "--zip = [2, 3]: zipped keys need lists of one length"),
    ({"field.E0": [0.01, 0.02], "output.observables_every": [1, 2]}, False,
     "output.observables_every = [1, 2]: changes the members' time axis (time.dt, time.t_end "
     "or output.observables_every): a scan's members share one; run each with `tdse run "
     "INPUT --set output.observables_every=VALUE`"),
])
def test_the_members_refusals_word_for_word(base, sets, zipped, line):
    """scan.members refuses, before any work, in one line naming the option or key: no
    keys, zipped keys of unequal lengths, a key that changes the members' time axis (named
    even where it is not the first key)."""
    with pytest.raises(ConfigError) as e:
        scan_mod.members(base, sets, zipped=zipped)
    assert str(e.value) == line


def test_the_errors_a_worker_may_raise_cross_processes_whole():
    """ConfigError (and StepTooSmall), chebyshev.OutOfReach, Interrupted and StorageError
    survive pickle -- how a scan's Dask worker hands an exception back -- as their own type,
    message and fields (ConfigError had failed to unpickle: TypeError, its one-line message
    taken for its three arguments)."""
    import pickle

    from tdse.errors import ConfigError
    from tdse.numerics.adaptive import StepTooSmall
    from tdse.numerics.chebyshev import OutOfReach
    from tdse.run.interrupts import Interrupted
    from tdse.run.snapshots import StorageError
    for e in (ConfigError("grid.dx", 0.3, "not whole"), StepTooSmall("time.tolerance", 1e-300, "x"),
              OutOfReach(4e9, "R = 4e9 needs more"), Interrupted("SIGTERM", "a.h5.part", 3, 1.5),
              StorageError("a.h5.part", 3, 2048, 1024, "no space")):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e) and back.args == e.args
    assert pickle.loads(pickle.dumps(ConfigError("a", 1, "b"))).key == "a"


def test_a_batch_returns_a_refusal_where_a_cluster_would_retry_it(base, monkeypatch):
    """batch_task hands a ConfigError back as {"refused": it} (Dask retried a raised one three
    times and logged its traceback), and scan() raises it, one line."""
    def refuse(*a, **k):
        raise ConfigError("time.tolerance", 1e-300, "at t = 0 it needs steps under time.dt_min")
    monkeypatch.setattr(scan_mod, "run_batch", refuse)
    got = scan_mod.batch_task([base], "numpy", None, False)
    assert isinstance(got["refused"], ConfigError)
    with pytest.raises(ConfigError, match="time.tolerance = 1e-300"):
        scan_mod.scan(base, {"field.E0": [0.02, 0.03]})
