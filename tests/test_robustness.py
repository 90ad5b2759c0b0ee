"""Robustness: resume, interrupts (SIGINT, SIGTERM, SIGKILL in a subprocess), resource
checks, output safety, hostile input (hypothesis) and determinism."""
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from tdse import config as cfgmod
from tdse.run import resources
from tdse.ui.cli import main
from tdse.run.interrupts import Interrupted
from tdse.run.driver import run
from tdse.run.resources import check_resources
from tdse.run.snapshots import NotOurFile, read, resume_state

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

VALID = {
    "name": "h",
    "grid": {"x_min": -6.4, "x_max": 6.4, "dx": 0.2, "stencil": 3},
    "potential": {"a": 0.5, "centres": [
        {"x0": -1.0, "Z": 2.0, "amplitude": 0.3, "frequency": 3.0},
        {"x0": 1.0, "Z": 2.0, "amplitude": 0.3, "frequency": 3.0}]},
    "initial": {"state": 0},
    "time": {"dt": 0.005, "t_end": 0.5},
    "propagator": {"method": "auto", "tolerance": 1e-12},
    "output": {"every": 10, "populations": 4},
}


def _val(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else
                                            "-inf" if v == -math.inf else repr(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        import json
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")  # TOML escapes
    if isinstance(v, list):
        return "[" + ", ".join(_val(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_val(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def to_toml(d):
    """A minimal TOML writer for these inputs (no extra dependency)."""
    lines = [f"{k} = {_val(v)}" for k, v in d.items() if not isinstance(v, dict)]
    for sec, t in d.items():
        if not isinstance(t, dict):
            continue
        lines.append(f"[{sec}]")
        arrays = {k: v for k, v in t.items() if isinstance(v, list) and v and
                  all(isinstance(x, dict) for x in v)}
        lines += [f"{k} = {_val(v)}" for k, v in t.items() if k not in arrays]
        for k, v in arrays.items():
            for item in v:
                lines.append(f"[[{sec}.{k}]]")
                lines += [f"{kk} = {_val(vv)}" for kk, vv in item.items()]
    return "\n".join(lines) + "\n"


def deep(d):
    import copy
    return copy.deepcopy(d)


# ------------------------------------------------------------------ resume
@pytest.mark.parametrize("operator", [False, True])
def test_resume_after_interrupt_equals_uninterrupted(tmp_path, interrupt_after, operator):
    """Interrupted at its third snapshot's write, resumed: the same bits.  (Its error
    estimated in pieces that span the snapshots, the snapshots whose e was still to be made
    reach the file at the interrupt: the file holds three or more.)"""
    d = deep(VALID)
    d["propagator"]["operator"] = operator
    cfg = cfgmod.loads(to_toml(d))
    ref = read(run(cfg, tmp_path / "ref", backend="numpy").path)

    armed = interrupt_after(3, "SIGTERM")
    with pytest.raises(Interrupted) as ei:
        run(cfg, tmp_path / "cut", backend="numpy")
    armed.disarm()
    part = str(tmp_path / "cut" / "h.h5.part")
    assert ei.value.path == part and ei.value.signame == "SIGTERM" and "tdse resume" in str(ei.value)
    assert not os.path.exists(tmp_path / "cut" / "h.h5")  # the final name only when complete
    st_ = resume_state(part)
    assert st_["count"] >= 3 and st_["step"] == 10 * (st_["count"] - 1) < cfg.time.steps
    res = run(cfg, None, backend="numpy", resume=(st_, part))
    assert res.path == str(tmp_path / "cut" / "h.h5") and not os.path.exists(part)
    got = read(res.path)
    assert got["attrs"]["complete"] and got["attrs"]["resumed_at_step"] == st_["step"]
    for k in ("snapshots/psi", "snapshots/t", "observables/norm", "observables/populations_h0"):
        assert got[k].shape == ref[k].shape
        assert np.array_equal(got[k], ref[k]), k  # bit-identical on the CPU
    if operator:
        assert np.array_equal(got["operator/P"], ref["operator/P"])


@pytest.mark.parametrize("time_error", ["none", "estimate"])
def test_a_signal_while_the_sinks_end_is_an_interrupt_and_resumes(tmp_path, monkeypatch, time_error):
    """A SIGTERM while the run's sinks end (on a GPU the snapshots still being copied are
    written then) stops the run as one in the loop does: Interrupted naming the .part
    file, which resumes -- here with every step already done -- to the uninterrupted
    run's file."""
    from tdse.run.sinks import Snapshots
    d = deep(VALID)
    d["propagator"]["time_error"] = time_error
    cfg = cfgmod.loads(to_toml(d))
    ref = read(run(cfg, tmp_path / "ref", backend="numpy").path)
    finish = Snapshots.end

    def end_then_signal(self, state):
        finish(self, state)
        raise KeyboardInterrupt("SIGTERM")
    with monkeypatch.context() as m:
        m.setattr(Snapshots, "end", end_then_signal)
        with pytest.raises(BaseException) as ei:    # (a KeyboardInterrupt would end pytest)
            run(cfg, tmp_path / "cut", backend="numpy")
    assert isinstance(ei.value, Interrupted) and ei.value.signame == "SIGTERM", repr(ei.value)
    part = str(tmp_path / "cut" / "h.h5.part")
    st_ = resume_state(part)
    assert st_["step"] == cfg.time.steps and st_["count"] == len(ref["snapshots/t"])
    got = read(run(cfg, None, backend="numpy", resume=(st_, part)).path)
    assert got["attrs"]["complete"]
    if time_error == "estimate":
        a, b = (json.loads(f["attrs"]["time_error"]) for f in (got, ref))
        for k in ("error_at_t_end", "max_error", "population_error_at_t_end",
                  "population_bound_at_t_end", "steps_taken"):
            assert a[k] == b[k], k
    for k in ("snapshots/psi", "snapshots/t", "snapshots/time_error", "observables/norm",
              "observables/populations_h0"):
        assert np.array_equal(got[k], ref[k], equal_nan=True), k


def test_a_part_file_of_an_earlier_version_with_fewer_observables_resumes(tmp_path, interrupt_after):
    """A .part written before an observable existed (yield_flux and populations_h0 deleted
    here, as an earlier version's file lacks them): resumed, the file has them, NaN in the
    rows it held and equal to an uninterrupted run's after; every other dataset bit for bit."""
    import h5py
    cfg = cfgmod.loads(to_toml(deep(VALID)))
    ref = read(run(cfg, tmp_path / "ref", backend="numpy").path)
    armed = interrupt_after(3, "SIGTERM")
    with pytest.raises(Interrupted):
        run(cfg, tmp_path / "cut", backend="numpy")
    armed.disarm()
    part = str(tmp_path / "cut" / "h.h5.part")
    with h5py.File(part, "r+") as f:
        del f["observables/yield_flux"], f["observables/populations_h0"]
    st_ = resume_state(part)
    got = read(run(cfg, None, backend="numpy", resume=(st_, part)).path)
    for k, v in ref.items():
        if k.startswith(("snapshots/", "observables/")) and k not in ("observables/yield_flux",
                                                                     "observables/populations_h0"):
            assert np.array_equal(got[k], v), k
    for k in ("observables/yield_flux", "observables/populations_h0"):
        kept = int(np.searchsorted(ref["observables/step"], st_["step"], side="right"))
        assert got[k].shape == ref[k].shape and 0 < kept < len(ref[k]), k
        assert np.isnan(got[k][:kept]).all() and np.array_equal(got[k][kept:], ref[k][kept:]), k


def test_resume_refuses_complete_foreign_and_damaged_files(tmp_path):
    cfg = cfgmod.loads(to_toml(VALID))
    done = run(cfg, tmp_path, backend="numpy").path
    with pytest.raises(NotOurFile, match="already complete"):
        resume_state(done)
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.arange(3)
    newer = tmp_path / "newer.h5"
    with h5py.File(newer, "w") as f:
        f.attrs["format"] = "tdse-h2plus/99"
    trunc = tmp_path / "trunc.h5"
    raw = Path(done).read_bytes()
    trunc.write_bytes(raw[: len(raw) // 3])
    text = tmp_path / "text.h5"
    text.write_text("not hdf5")
    r = CliRunner()
    for bad, words in ((foreign, "not a tdse run file"), (newer, "another version"),
                       (trunc, "not a readable HDF5"), (text, "not a readable HDF5"),
                       (tmp_path / "missing.h5", "no such file")):
        for cmd in (["resume", str(bad)], ["plot", str(bad)]):
            out = r.invoke(main, cmd)
            assert out.exit_code == 2, (cmd, out.output)
            assert words in out.output and "Traceback" not in out.output
            assert len(out.output.strip().splitlines()) == 1, out.output


# ------------------------------------------------------------------ interrupts
def _slow_input(tmp_path, t_end=2.0):
    text = Path(os.path.join(ROOT, "inputs", "thesis_fig6.toml")).read_text()
    text = text.replace("t_end = 10.0", f"t_end = {t_end}").replace("every = 50", "every = 20")
    text = text.replace('scheme = "midpoint"', 'scheme = "midpoint"\ntime_error = "none"')
    text = text.replace('method = "taylor"', 'method = "dense"')    # ~10 s a run, not 15
    assert f"t_end = {t_end}" in text and 'method = "dense"' in text
    p = tmp_path / "slow.toml"
    p.write_text(text)
    return p


def _start(args, tmp_path):
    """The CLI in a subprocess that inherits SIGINT *ignored*, as a background job of a
    non-interactive shell (CI) does: the run must still stop on SIGINT."""
    env = {**os.environ, "PYTHONPATH": ROOT}

    def ignore_sigint():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return subprocess.Popen([sys.executable, "-m", "tdse.ui.cli", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=ignore_sigint)


def _wait_for(path, proc, extra=2.0, limit=60.0):
    t0 = time.time()
    while not os.path.exists(path):
        assert proc.poll() is None, proc.communicate()
        assert time.time() - t0 < limit
        time.sleep(0.05)
    time.sleep(extra)


@pytest.fixture(scope="module")
def slow_reference(tmp_path_factory):
    """The uninterrupted run of :func:`_slow_input`, made once for the three signals."""
    d = tmp_path_factory.mktemp("slow_ref")
    return read(run(cfgmod.load(_slow_input(d)), d / "ref", backend="numpy").path)


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130),
                                       (signal.SIGKILL, -9)])
def test_signals_leave_a_valid_resumable_file(tmp_path, sig, code, slow_reference):
    inp = _slow_input(tmp_path)
    out = tmp_path / "out"
    p = _start(["run", str(inp), "--out", str(out), "--backend", "numpy", "--no-plots"], tmp_path)
    part = out / "thesis_fig6.h5.part"
    _wait_for(part, p)
    p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == code, stderr[-500:]
    if sig != signal.SIGKILL:
        assert "tdse resume" in stderr and "Traceback" not in stderr
    d = read(part)  # opens; holds every flushed snapshot
    assert not d["attrs"]["complete"] and len(d["snapshots/t"]) >= 1
    # resume it, and compare with an uninterrupted run of the same input
    r = CliRunner().invoke(main, ["resume", str(part), "--backend", "numpy", "--no-plots"])
    assert r.exit_code == 0, r.output
    full = read(out / "thesis_fig6.h5")
    assert np.array_equal(full["snapshots/psi"], slow_reference["snapshots/psi"])
    assert full["attrs"]["complete"]


# ------------------------------------------------------------------ output safety
def test_part_file_is_not_overwritten_and_names_resume(tmp_path):
    cfg = cfgmod.loads(to_toml(VALID))
    (tmp_path / "h.h5.part").write_bytes(b"x")
    p = tmp_path / "in.toml"
    p.write_text(to_toml(VALID))
    r = CliRunner().invoke(main, ["run", str(p), "--out", str(tmp_path), "--backend", "numpy"])
    assert r.exit_code == 2 and "tdse resume" in r.output and "--force" in r.output
    assert (tmp_path / "h.h5.part").read_bytes() == b"x"  # nothing lost
    r = CliRunner().invoke(main, ["run", str(p), "--out", str(tmp_path), "--backend", "numpy",
                                  "--force", "--no-plots"])
    assert r.exit_code == 0 and (tmp_path / "h.h5").exists() and not (tmp_path / "h.h5.part").exists()
    assert cfg.name == "h"


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_and_new_output_folders(tmp_path):
    p = tmp_path / "in.toml"
    p.write_text(to_toml(VALID))
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        r = CliRunner().invoke(main, ["run", str(p), "--out", str(ro / "sub"), "--backend", "numpy"])
        assert r.exit_code == 2 and "--out" in r.output and "Traceback" not in r.output
    finally:
        ro.chmod(0o700)
    r = CliRunner().invoke(main, ["run", str(p), "--out", str(tmp_path / "a" / "b"), "--backend",
                                  "numpy", "--no-plots"])
    assert r.exit_code == 0 and (tmp_path / "a" / "b" / "h.h5").exists()


# ------------------------------------------------------------------ resources
def test_gpu_memory_refusal_names_the_largest_n(tmp_path):
    d = deep(VALID)
    d["grid"]["dx"] = 0.0125  # N = 1024
    cfg = cfgmod.loads(to_toml(d))
    for g, op in ((1, False), (4, False), (4, True)):
        need = resources.gpu_memory_estimate(1024, g, op)
        with pytest.raises(cfgmod.ConfigError, match=r"grid.dx .*largest N that fits is about (\d+)") as e:
            check_resources(cfg if not op else cfgmod.loads(to_toml({**d, "propagator": {
                "method": "auto", "operator": True}})), "cupy", list(range(g)), tmp_path,
                free_gpu=need // 2, free_disk=1 << 40)
        n_fit = int(str(e.value).rsplit("about ", 1)[1])
        assert resources.gpu_memory_estimate(n_fit, g, op) <= need // 2 < \
            resources.gpu_memory_estimate(n_fit + 1, g, op)
    check_resources(cfg, "cupy", [0], tmp_path, free_gpu=1 << 40, free_disk=1 << 40)


def test_disk_refusal_and_warning(tmp_path):
    """A file that cannot fit is refused before any work (naming --out, what it needs and
    what is free); one that would nearly fill the disk is warned about."""
    from tdse.run.resources import output_bytes
    cfg = cfgmod.loads(to_toml(VALID))
    need = output_bytes(cfg)
    with pytest.raises(cfgmod.ConfigError, match=r"--out .*needs about .* free"):
        check_resources(cfg, "numpy", None, tmp_path, free_disk=need // 2)
    with pytest.warns(ResourceWarning, match="are free"):
        check_resources(cfg, "numpy", None, tmp_path, free_disk=int(need * 1.05))


def test_output_size_estimate_bounds_the_file(tmp_path):
    """The estimate the refusal rests on is at least the size of the file a run writes."""
    import tdse
    from tdse.run.resources import output_bytes
    cfg = cfgmod.loads(to_toml(VALID))
    res = tdse.simulate(cfg, backend="numpy", out=str(tmp_path))
    size = os.path.getsize(res.path)
    assert size <= output_bytes(cfg) <= 4 * size + 2**20


# ------------------------------------------------------------------ hostile input
NUMERIC_KEYS = [("grid", "x_min"), ("grid", "x_max"), ("grid", "dx"), ("potential", "a"),
                ("time", "dt"), ("time", "t_end"), ("propagator", "tolerance")]
POSITIVE = {("grid", "dx"), ("potential", "a"), ("time", "dt"), ("time", "t_end"),
            ("propagator", "tolerance")}
INT_KEYS = [("grid", "stencil"), ("output", "every"), ("output", "populations"),
            ("propagator", "terms"), ("initial", "state")]
wrong_type = st.one_of(st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2),
                       st.dictionaries(st.sampled_from(["a", "b"]), st.integers(), max_size=1))
non_finite = st.sampled_from([math.nan, math.inf, -math.inf])


def _cli_rejects(text_or_bytes, tmp_path, key_words):
    import tempfile
    from pathlib import Path
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # fresh per hypothesis example
    p = tmp_path / "bad.toml"
    if isinstance(text_or_bytes, bytes):
        p.write_bytes(text_or_bytes)
    else:
        p.write_text(text_or_bytes)
    r = CliRunner().invoke(main, ["run", str(p), "--out", str(tmp_path / "o"), "--backend", "numpy",
                                  "--no-plots"])
    out = r.output.strip()
    assert r.exit_code == 2, out
    assert "Traceback" not in out and len(out.splitlines()) == 1, out
    assert out.startswith("error: ")
    assert any(w in out for w in key_words), (key_words, out)
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(NUMERIC_KEYS), bad=st.one_of(wrong_type, non_finite))
def test_numeric_keys_reject_wrong_types_and_non_finite(tmp_path, key, bad):
    d = deep(VALID)
    d[key[0]][key[1]] = bad
    _cli_rejects(to_toml(d), tmp_path, [f"{key[0]}.{key[1]}"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(sorted(POSITIVE)), bad=st.floats(max_value=0.0, allow_nan=False,
                                                         allow_infinity=False))
def test_positive_keys_reject_zero_and_negative(tmp_path, key, bad):
    d = deep(VALID)
    d[key[0]][key[1]] = bad
    _cli_rejects(to_toml(d), tmp_path, [f"{key[0]}.{key[1]}"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(INT_KEYS), bad=st.one_of(
    st.integers(min_value=-10**30, max_value=-1), st.integers(min_value=10**9, max_value=10**30),
    st.floats(allow_nan=True), wrong_type.filter(lambda v: not isinstance(v, str) or v != "gaussian")))
def test_integer_keys_reject_bad_values(tmp_path, key, bad):
    if key == ("output", "every") and isinstance(bad, int) and bad > 0:
        return  # a huge `every` is valid: snapshots at the start and the last step only
    d = deep(VALID)
    d[key[0]][key[1]] = bad
    _cli_rejects(to_toml(d), tmp_path, [f"{key[0]}.{key[1]}"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(section=st.sampled_from(["grid", "potential", "time", "name"]))
def test_missing_sections_named(tmp_path, section):
    d = deep(VALID)
    del d[section]
    _cli_rejects(to_toml(d), tmp_path, [section])


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(min_size=1, max_size=200))
def test_arbitrary_bytes_never_crash(tmp_path, raw):
    p = tmp_path / "bytes.toml"
    p.write_bytes(raw)
    r = CliRunner().invoke(main, ["run", str(p), "--out", str(tmp_path / "o"), "--backend", "numpy"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


@pytest.mark.parametrize("text, words", [
    (to_toml(VALID) + "\n[grid]\ndx = 0.1\n", ["TOML"]),                     # duplicated table
    (to_toml(VALID).replace("dx = 0.2", "dx = 0.2\ndx = 0.1"), ["TOML"]),     # duplicated key
    (to_toml(VALID).encode("utf-8").replace(b"name = ", b"name = \xff\xfe"), ["UTF-8"]),
    (to_toml(VALID).replace("dx = 0.2", "dx = 2e-6"), ["grid.dx"]),         # wrong magnitude: N = 6.4e6
    (to_toml(VALID).replace("dx = 0.2", "dx = 200.0"), ["grid.dx"]),
    (to_toml(VALID).replace("t_end = 0.5", "t_end = 5e9"), ["time.t_end"]),
    (to_toml(VALID).replace("dt = 0.005", "dt = 5.0").replace("t_end = 0.5", "t_end = 10.0")
     .replace('method = "auto"', 'method = "taylor"'), ["time.dt"]),       # dt in the wrong unit
    (to_toml(VALID).replace("dt = 0.005", "dt = 0.0051"), ["time.t_end"]),  # not re-rounded
    (to_toml(VALID).replace("[output]", "[output]\nbogus = 1"), ["output.bogus"]),
])
def test_specific_malformed_inputs(tmp_path, text, words):
    _cli_rejects(text, tmp_path, words)


# ------------------------------------------------------------------ determinism
def test_same_input_gives_identical_bits_and_records_versions(tmp_path):
    cfg = cfgmod.loads(to_toml(VALID))
    a = read(run(cfg, tmp_path / "a", backend="numpy").path)
    b = read(run(cfg, tmp_path / "b", backend="numpy").path)
    for k in ("snapshots/psi", "observables/energy", "observables/populations_ht"):
        assert np.array_equal(a[k], b[k]), k
    for lib in ("lib_numpy", "lib_scipy", "lib_h5py", "lib_hdf5", "lib_mgemm", "lib_python"):
        assert a["attrs"][lib]


def test_gpu_memory_of_a_matrix_free_run_is_not_charged_dense_matrices(tmp_path):
    """A Chebyshev run keeps O(N) vectors (and the DVR's real N x N kinetic matrix): N =
    32768 5-point fits in 139 GiB (the h2plus_ir_large study ran it on one H200), where the
    dense exponent's estimate would refuse it; a DVR run is charged its 8 N^2 bytes, and
    too little memory still refuses with the largest N."""
    d = deep(VALID)
    d["grid"]["dx"] = 12.8 / 32768
    d["grid"]["stencil"] = 5
    d["propagator"] = {"method": "chebyshev"}
    cfg = cfgmod.loads(to_toml(d))
    assert cfg.grid.n == 32768
    free = 139 * 2 ** 30
    check_resources(cfg, "cupy", [0], tmp_path, free_gpu=free, free_disk=1 << 40)
    assert resources.gpu_memory_estimate(32768, 1) > free                      # dense: refused
    assert resources.gpu_memory_estimate(32768, 1, method="chebyshev", stencil=5) < 2 ** 30
    dvr = resources.gpu_memory_estimate(32768, 1, method="chebyshev", stencil="dvr")
    assert 8 * 32768 ** 2 <= dvr < 8.1 * 32768 ** 2
    d["grid"]["stencil"] = "dvr"
    with pytest.raises(cfgmod.ConfigError, match=r"largest N that fits is about (\d+)") as e:
        check_resources(cfgmod.loads(to_toml(d)), "cupy", [0], tmp_path, free_gpu=dvr // 4,
                        free_disk=1 << 40)
    n_fit = int(str(e.value).rsplit("about ", 1)[1])
    assert 16000 <= n_fit <= 16400                                   # a quarter of 8 N^2


@pytest.mark.slow
@pytest.mark.parametrize("later", [False, True], ids=["spawned", "forked_from_the_server"])
def test_the_look_ahead_workers_end_when_their_run_leaves_at_once(later):
    """A process whose eigenpairs workers (tdse.run.eigenpairs.Workers) are up leaves with
    os._exit, as a run does when the full disk refuses its file's close (or a SIGKILL):
    the workers end within a second or so (tdse.run.ahead_child's watch of the process that
    made them), and a reader of the process's pipes sees their end -- the workers had lived
    on holding them, and the full-disk test's `tdse run` under a pipe waited out its 300 s.
    Also a later run's workers, forked from the fork server the first run's close started:
    their OS parent is the server, which ends only once they have (a watch of the OS
    parent had kept both, and this test's pipes, for ever).  The run's folder of states
    (with a task's not taken, or empty) is removed by the workers before they end."""
    code = ("import os\n"
            "from tdse import config\n"
            "from tdse.model.tracker import Tracker\n"
            "from tdse.run.eigenpairs import Workers, _pairs\n"
            + ("w = Workers(1)\nw.ready.result(timeout=60)\nw.close()\n" if later else "")
            + "w = Workers(1)\n"
            "w.ready.result(timeout=60)\n"
            + ("" if later else          # (a task's states left in the folder, or none)
               "cfg = config.load('inputs/h2plus_moving.toml').with_value('grid.stencil', 3)\n"
               "tr = Tracker(cfg, 4)\n"
               "w.submit(_pairs, (1, 1), (cfg, tr.K, tr.settings()), (0.3,), w.folder).result(timeout=60)\n")
            + "print(w.folder, *[p.pid for p in w.pool._processes.values()], flush=True)\n"
            "os._exit(0)\n")
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    folder, *pids = r.stdout.split()
    pids = [int(v) for v in pids]
    assert r.returncode == 0 and pids and os.path.isabs(folder), r.stderr

    def alive(pid):
        try:
            with open(f"/proc/{pid}/status") as f:
                return "\nState:\tZ" not in f.read()
        except FileNotFoundError:
            return False
    while any(alive(p) for p in pids) and time.monotonic() - t0 < 30:
        time.sleep(0.1)
    assert not any(alive(p) for p in pids)
    assert not os.path.exists(folder)       # (the states a worker left: removed by it)


def test_a_later_runs_look_ahead_forks_its_workers_from_a_server_with_the_same_pairs():
    """A run's close starts the fork server (tdse.run.eigenpairs._start_server) where the
    platform has one; the next run's workers are forked from it once it has imported the
    solvers (its file; spawned until then: a fork would wait for them) -- CuPy shut out --
    and give the same pairs, bit for bit, as spawned ones; the
    command line's close (serve=False) starts none."""
    import multiprocessing

    from tdse.model.tracker import Tracker
    from tdse.run import eigenpairs
    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork server on this platform")
    cfg = cfgmod.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                   "inputs", "h2plus_moving.toml"))
    cfg = cfg.with_value("grid.stencil", 3).with_value("output.populations_every", 5)
    tr = Tracker(cfg, 4)
    begin, times = (cfg, tr.K, tr.settings()), (0.3, 0.4)
    from tdse.run.ahead_child import server_marker
    marker = server_marker(os.getpid())
    got = []
    for k in range(2):
        if k:           # the server started by the first close: its workers once it has
            end = time.monotonic() + 60      # imported the solvers (its file), spawned before
            while not os.path.exists(marker) and time.monotonic() < end:
                assert eigenpairs._context(multiprocessing).get_start_method() == "spawn"
                time.sleep(0.01)
        w = eigenpairs.Workers(1)
        method = w.pool._mp_context.get_start_method()
        got.append(w.submit(eigenpairs._pairs, (os.getpid(), 9000 + k), begin, times).result(timeout=60)[0])
        w.close()
        assert (method == "forkserver") == (bool(eigenpairs._SERVER) and os.path.exists(marker)) or k == 0
    assert eigenpairs._SERVER and method == "forkserver"
    ref = [tr(t) for t in times]          # (3-point: no BLAS in its solvers, the same bits here)
    for pairs in got:                     # spawned (or forked, where an earlier test left the
        for (E, phi), (e, q) in zip(pairs, ref):      # server running) and forked alike
            assert np.array_equal(E, e) and np.array_equal(phi, q)
    # the command line's processes: spawned, and their close starts no server
    keep = list(eigenpairs._SERVER)
    eigenpairs._SERVER.clear()
    try:
        w = eigenpairs.Workers(1)
        assert w.pool._mp_context.get_start_method() == "spawn"
        w.close(serve=False)
        assert not eigenpairs._SERVER
    finally:
        eigenpairs._SERVER[:] = keep


def test_closing_the_look_ahead_ends_its_processes_at_once():
    """Workers.close ends the processes (SIGTERM) whatever they are doing -- here still
    importing, before their start is done: a graceful shutdown had made a short run's exit
    wait for each worker's start (~0.3 s of imports) and its interpreter's teardown (a one-
    step `tdse run` on 2 CPUs 0.76-0.86 s, now 0.44-0.51, startup_ab_cpu2_20261130T1520.txt); and a later close
    does not fail."""
    import signal
    import time

    from tdse.run import eigenpairs
    keep = list(eigenpairs._SERVER)     # (spawned, as a process's first run's: no fork server)
    eigenpairs._SERVER.clear()
    try:
        w = eigenpairs.Workers(1)
        procs = list(w.pool._processes.values())
        assert procs and not w.ready.done()        # (closed before the worker has started)
        w.close(serve=False)
        end = time.monotonic() + 30
        for p in procs:
            # (the pool's thread joins them too: where its waitpid reaps one first, this
            # one's join returns before the code is stored -- exitcode None once in CI)
            while p.exitcode is None and time.monotonic() < end:
                p.join(timeout=0.05)
            assert p.exitcode == -signal.SIGTERM   # ended, not left to finish its start
        w.close(serve=False)
    finally:
        eigenpairs._SERVER[:] = keep


def test_closing_the_look_ahead_with_tasks_queued_prints_no_thread_error():
    """Workers.close with a task running, one queued and six cancelled (as a run's look-
    ahead cancels those it no longer needs), the pool collected at once: the ended
    processes break the pool, and its thread marks the tasks it still lists failed -- on
    Python < 3.12 it raised InvalidStateError on a cancelled one (CPython gh-107219), a
    traceback printed after a run (seen in CI; here 3 of 3 closes without the close's wait
    for the thread to see the shutdown, 15 of 20 in a script).  (A first fix, the pool kept
    until its thread ended, still failed once in CI: the thread can find the pipe's end of
    file before the shutdown.)"""
    import gc
    import threading
    import time

    from tdse.run import eigenpairs
    keep = list(eigenpairs._SERVER)
    eigenpairs._SERVER.clear()
    errors, hook = [], threading.excepthook
    threading.excepthook = errors.append
    try:
        for _ in range(3):
            w = eigenpairs.Workers(1)
            w.ready.result(timeout=60)
            tasks = [w.submit(time.sleep, 30.0) for _ in range(8)]
            for t in tasks[2:]:                     # (cancelled by a run's look-ahead)
                t.cancel()
            thread = w.pool._executor_manager_thread
            w.close(serve=False)
            del w                                   # (the pool collected at once: a run's
            gc.collect()                            # end, its thread not yet woken)
            thread.join(timeout=30)
            assert not thread.is_alive() and not errors, errors
            assert all(t.cancelled() or isinstance(t.exception(timeout=30), Exception)
                       for t in tasks)
    finally:
        threading.excepthook = hook
        eigenpairs._SERVER[:] = keep


def test_closing_the_look_ahead_while_a_worker_writes_its_result_leaves_no_thread_behind():
    """Workers.close while a worker is writing a large result to the pool's pipe (a
    window's pairs: 313 kB at N = 8192): the pool's thread, which had read part of it,
    read the rest for ever, and the interpreter's exit waited for it (a test session hung
    1 time in 6, py-spy showed 63554 of 313410 bytes read).  Here the write is caught
    under way by its process's written bytes (/proc/PID/io: the message's header, then its
    256 MiB body) and the thread ends, the task failed."""
    import concurrent.futures.process
    import time

    from tdse.run import eigenpairs
    keep = list(eigenpairs._SERVER)
    eigenpairs._SERVER.clear()
    caught = 0
    try:
        for _ in range(4):          # (a try whose write ended before the close, on a busy
            w = eigenpairs.Workers(1)           # box, tries again: one caught is asked)
            w.ready.result(timeout=60)
            pid = next(iter(w.pool._processes))
            if not os.path.exists(f"/proc/{pid}/io"):
                w.close(serve=False)
                pytest.skip("no /proc/PID/io here")

            def written():
                with open(f"/proc/{pid}/io") as f:
                    return next(int(line.split()[1]) for line in f if line.startswith("wchar"))

            start, writer = written(), w.pool._result_queue._writer
            task = w.submit(bytes, 256 * 2 ** 20)       # (its result: 256 MiB of zeros)
            deadline = time.monotonic() + 60
            while written() == start and time.monotonic() < deadline:   # (its message's
                time.sleep(0.0002)                      # header: the body is one call)
            thread = w.pool._executor_manager_thread
            w.close(serve=False)
            under_way = not task.done()
            thread.join(timeout=30)
            alive = thread.is_alive()
            if alive:
                writer.close()          # (so that a failure here does not hang the session)
            assert not alive
            if under_way:
                assert isinstance(task.exception(timeout=30),
                                  concurrent.futures.process.BrokenProcessPool)
                caught += 1
                break
        assert caught
    finally:
        eigenpairs._SERVER[:] = keep


def test_a_small_stencil_runs_error_bar_does_not_import_scipy_fft(inputs_dir, monkeypatch):
    """tiny (3-point, N = 64) with its time error: the split carrier's kinetic factor is one
    dense product up to carrier.DENSE_MAX_N, so the run needs no FFT -- scipy.fft's import
    (~45 ms a process on 2 CPUs, bytecode cached, which tiny's `tdse run` had printed as its
    estimate's +63-77 % of the stepping time) is not paid; here it would fail."""
    import tdse
    from tdse.model import ffts
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml"))
    assert cfg.propagator.time_error == "estimate"
    monkeypatch.setattr(ffts, "_POCKET", [])                  # (no binding found earlier)
    monkeypatch.setitem(sys.modules, "scipy.fft", None)       # (an import of it raises)
    r = tdse.simulate(cfg, backend="numpy")
    assert r.time_error["kind"] == "estimate" and 0 < r.time_error["error_at_t_end"] < 1e-9


def test_a_run_without_its_progress_bar_does_not_import_tqdm(inputs_dir, monkeypatch):
    """A run with progress off (tdse.simulate's default, `tdse run --quiet`) makes no bar:
    tqdm.auto's import (~15 ms of a one-step run on 2 CPUs: tqdm and asyncio) is not paid
    -- here it would fail; with progress on, the bar moves to the last step."""
    import tdse
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml"))
    ref = tdse.simulate(cfg, backend="numpy", progress=True)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)        # (an import of it raises)
    got = tdse.simulate(cfg, backend="numpy", progress=False)
    assert np.array_equal(got.psi, ref.psi) and got.steps == ref.steps
