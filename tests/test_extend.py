"""`tdse run INPUT --continue RUN.h5 --t-end T` (tdse/run/extend.py, #55 item 4): a finished
run extended into a new file holds the bits of the run of INPUT straight to T (every
dataset, the time-error companion's too), and whatever cannot be continued is one line,
exit 2, with nothing written."""
from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from tdse.ui.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _input(tmp_path, t_end, extra="", method=None):
    """tiny.toml to ``t_end``; ``method``: in place of its "auto" -- the straight run takes the
    method the short run resolved, as the continuation does: auto times both methods anew
    for the straight run (its precheck's theta differs in the last digits), and on a loaded
    box that timing had picked the dense exponent once in ~30 CI runs (every dataset then
    other bits, the first compared observables/acceleration)."""
    text = Path(os.path.join(ROOT, "inputs", "tiny.toml")).read_text().replace("t_end = 1.0", f"t_end = {t_end}")
    if method is not None:
        assert 'method = "auto"' in text
        text = text.replace('method = "auto"', f'method = "{method}"')
    text = text.replace("[propagator]", "[propagator]\n" + extra) if extra else text
    path = tmp_path / f"tiny_{t_end}.toml"
    path.write_text(text)
    return str(path)


def _tdse(*args):
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def _method(path):
    """The method a run file's run resolved (auto's choice)."""
    with h5py.File(path) as f:
        return str(f.attrs["method"])


def _datasets(path):
    out = {}
    with h5py.File(path) as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out


@pytest.mark.parametrize("extra", ["", 'time_error = "companion"'])
def test_a_continued_run_equals_the_straight_run(tmp_path, extra):
    """tiny to t = 0.5, continued to 1.0, against tiny straight to 1.0: every dataset equal
    bit for bit (0.5 is a snapshot of the straight run), the companion's time errors too."""
    short = _input(tmp_path, 0.5, extra)
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert _tdse("run", short, "--out", a, "-q", "--no-plots")[0] == 0
    full = _input(tmp_path, 1.0, extra, method=_method(os.path.join(a, "tiny.h5")))
    rc, out = _tdse("run", short, "--out", a, "-q", "--no-plots", "--continue",
                    os.path.join(a, "tiny.h5"), "--t-end", "1.0")
    assert rc == 0, out
    assert _tdse("run", full, "--out", b, "-q", "--no-plots")[0] == 0
    got, want = _datasets(os.path.join(a, "tiny_to_1.h5")), _datasets(os.path.join(b, "tiny.h5"))
    assert set(got) == set(want)
    for k in want:
        assert got[k].shape == want[k].shape and np.array_equal(
            got[k], want[k], equal_nan=want[k].dtype.kind in "fc"), k
    with h5py.File(os.path.join(a, "tiny_to_1.h5")) as f:
        assert f.attrs["complete"] and f.attrs["continued_from"].endswith("tiny.h5")
        assert "t_end = 1.0" in f.attrs["effective_toml"]
        if extra:
            assert np.isfinite(f["snapshots/time_error"][-1])
    assert os.path.exists(os.path.join(a, "tiny.h5"))           # the old file untouched


def test_what_cannot_continue_is_one_line(tmp_path):
    short = _input(tmp_path, 0.5)
    a = str(tmp_path / "a")
    assert _tdse("run", short, "--out", a, "-q", "--no-plots")[0] == 0
    old = os.path.join(a, "tiny.h5")
    cases = [
        (["--continue", old], "--t-end"),                                  # one without the other
        (["--t-end", "1.0"], "--t-end"),
        (["--continue", old, "--t-end", "0.4"], "must be past"),
        (["--continue", old, "--t-end", "1.0025"], "time.t_end"),           # not whole steps
        (["--continue", old, "--t-end", "1.0", "--set", "time.dt=0.01"], "--set"),
        (["--continue", os.path.join(a, "missing.h5"), "--t-end", "1.0"], "cannot be read"),
    ]
    for args, words in cases:
        rc, out = _tdse("run", short, "--out", a, "-q", "--no-plots", *args)
        assert rc == 2 and words in out and "Traceback" not in out, (args, out)
    text = Path(short).read_text().replace("dt = 0.005", "dt = 0.0025")
    changed = tmp_path / "changed.toml"
    changed.write_text(text)
    rc, out = _tdse("run", str(changed), "--out", a, "-q", "--no-plots", "--continue", old,
                    "--t-end", "1.0")
    assert rc == 2 and "dt = 0.0025 here, dt = 0.005 in the file" in out
    assert sorted(os.listdir(a)) == ["tiny.h5"]                          # nothing written
    assert _tdse("run", short, "--out", a, "-q", "--no-plots", "--continue", old, "--t-end", "1.0")[0] == 0
    rc, out = _tdse("run", short, "--out", a, "-q", "--no-plots", "--continue", old, "--t-end", "1.0")
    assert rc == 2 and "exists" in out                                   # without --force
    rc, out = _tdse("run", short, "--out", a, "-q", "--no-plots", "--continue",
                    os.path.join(a, "tiny_to_1.h5"), "--t-end", "1.5")   # a continued run goes on
    assert rc == 0 and os.path.exists(os.path.join(a, "tiny_to_1_to_1.5.h5")), out


def test_the_api_extends_and_takes_the_spectrum(tmp_path):
    """tdse.extend equals the CLI's --continue (the run straight to T, bit for bit), with the
    file's own input by default and refusing another one; tdse.photoelectron_spectrum reads
    a run file."""
    import tdse
    from tdse.config import ConfigError
    short = _input(tmp_path, 0.5)
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    first = tdse.simulate(short, out=a, backend="numpy")
    full = _input(tmp_path, 1.0, method=_method(first.path))
    res = tdse.extend(first.path, 1.0, backend="numpy")
    straight = tdse.simulate(full, out=b, backend="numpy")
    got, want = _datasets(res.path), _datasets(straight.path)
    assert set(got) == set(want) and all(np.array_equal(got[k], want[k], equal_nan=want[k].dtype.kind in "fc")
                                         for k in want)
    other = Path(short).read_text().replace("dt = 0.005", "dt = 0.0025")
    with pytest.raises(ConfigError, match="other numerics"):
        tdse.extend(first.path, 1.5, config=other, backend="numpy")
    spec = tdse.photoelectron_spectrum(res.path, gamma=0.05)
    assert spec["kind"] == "photoelectron" and len(spec["energy"]) == len(spec["all"]) > 10


def test_a_resume_changes_only_the_adaptive_steps_control(tmp_path):
    """tdse.run.extend.resumed: a key other than time.tolerance / time.dt_min, a run of fixed
    steps, or a value the input refuses (dt_min > dt) is a ConfigError naming it, before
    anything is written (the file here does not exist); no --set leaves the input as it was."""
    from tdse.config import ConfigError, load, with_values
    from tdse.run.extend import resumed
    fixed = load(os.path.join(ROOT, "inputs", "tiny.toml"))
    adaptive = with_values(fixed, [("time.tolerance", 1e-8)])
    missing = str(tmp_path / "none.h5.part")
    assert resumed(missing, fixed, [], 0) is fixed
    for cfg, sets, key in ((adaptive, [("grid.dx", 0.1)], "grid.dx"),
                           (fixed, [("time.tolerance", 1e-8)], "fixed steps"),
                           (adaptive, [("time.dt_min", 1.0)], "time.dt_min")):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            resumed(missing, cfg, sets, 0)
    assert not os.path.exists(missing)
