"""The run's performance options (tdse.options, #54 item 3): each declared once, validated
with a one-line error naming ``run.<key>``, recorded in the run file, settable from the
input's [run] table, ``tdse run --set`` and the API; the environment read in that module
alone."""
from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import tdse
from tdse import config as cfgmod
from tdse.config import ConfigError
from tdse.options import OPTIONS, RunOptions, parse_options
from tdse.run.snapshots import read
from tdse.ui.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: a value other than the default for each option (every option must have one here)
OTHER = {"graphs": False, "io_thread": "on", "eigen_workers": "off", "context_switch": False}


def test_the_options_are_few_and_declared_once():
    """RunOptions' fields are OPTIONS' names in order, at most 6, each default OPTIONS' own,
    each with a non-default value in this test's table (so the tests below cover each)."""
    fields = [f.name for f in dataclasses.fields(RunOptions)]
    assert fields == [o.name for o in OPTIONS] and len(fields) <= 6
    assert RunOptions().as_dict() == {o.name: o.default for o in OPTIONS}
    assert set(OTHER) == set(fields)
    for o in OPTIONS:
        assert OTHER[o.name] in o.choices and OTHER[o.name] != o.default


@pytest.mark.parametrize("name", [o.name for o in OPTIONS])
@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_each_option_is_validated_in_one_line(name, bad, inputs_dir):
    """A bad value of each option, from the input's [run] table, the API's dict or
    with_value: a ConfigError naming run.<name> and the value."""
    base = cfgmod.load(os.path.join(inputs_dir, "tiny.toml"))
    if bad is None:      # TOML has no null: an unknown key instead
        with pytest.raises(ConfigError, match=r"run.nonsense = 1: unknown key; allowed here: graphs"):
            cfgmod.loads(base.source + "\n[run]\nnonsense = 1\n")
        return
    text = base.source + f"\n[run]\n{name} = {json.dumps(bad)}\n"
    for make in (lambda: cfgmod.loads(text), lambda: parse_options({name: bad}),
                 lambda: base.with_value(f"run.{name}", bad),
                 lambda: tdse.prepare(base, backend="numpy", options={name: bad})):
        with pytest.raises(ConfigError) as ei:
            make()
        msg = str(ei.value)
        assert msg.startswith(f"run.{name} = {bad!r}: must be") and "\n" not in msg, msg


def test_every_option_is_recorded_in_the_run_file_and_read_back(tmp_path, inputs_dir):
    """Each option set to its non-default value by the API reaches the plan, the run file's
    ``run_options`` attribute and its effective input's [run] table, which loads back to
    the same options (what `tdse resume` reads)."""
    cfg = cfgmod.load(os.path.join(inputs_dir, "tiny.toml"))
    assert cfg.run == RunOptions()
    plan = tdse.prepare(cfg, backend="numpy", options=OTHER)
    assert plan.options.as_dict() == OTHER
    res = tdse.simulate(cfg, backend="numpy", out=str(tmp_path), options=OTHER)
    data = read(res.path)
    assert json.loads(data["attrs"]["run_options"]) == OTHER
    back = cfgmod.loads(data["attrs"]["effective_toml"])
    assert back.run.as_dict() == OTHER
    # options change no result: the config equal but for auto's choice, the observables a
    # default run's
    assert back == res.config
    ref = tdse.simulate(cfg, backend="numpy")
    for k in ("norm", "energy", "populations_ht"):
        assert (res.observables[k] == ref.observables[k]).all(), k


def test_options_from_the_input_and_from_set(tmp_path, inputs_dir):
    """The input's [run] table and `tdse run --set run.KEY=VALUE` (over the table) reach the
    run file; --set takes any input key (here time.t_end too)."""
    src = Path(inputs_dir, "tiny.toml").read_text()
    p = tmp_path / "t.toml"
    p.write_text(src + '\n[run]\nio_thread = "on"\ngraphs = false\n')
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["run", str(p), "--out", str(out), "--no-plots", "-q",
                                  "--backend", "numpy", "--set", "run.io_thread=off",
                                  "--set", "time.t_end=0.5"])
    assert r.exit_code == 0, r.output
    data = read(str(out / "tiny.h5"))
    got = json.loads(data["attrs"]["run_options"])
    assert got["io_thread"] == "off" and got["graphs"] is False
    assert data["attrs"]["steps"] == 100
    r = CliRunner().invoke(main, ["run", str(p), "--out", str(out), "-q", "--set", "time.dt"])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "--set" in r.output


def test_the_environment_is_read_in_tdse_options_alone():
    """No module of tdse but tdse/options.py reads or writes os.environ (or getenv)."""
    pat = re.compile(r"\bos\.environ\b|\bgetenv\(|\bputenv\(")
    found = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "tdse")):
        for f in files:
            path = os.path.join(dirpath, f)
            if not f.endswith(".py") or os.path.relpath(path, ROOT) == os.path.join("tdse", "options.py"):
                continue
            for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if pat.search(code):
                    found.append(f"{os.path.relpath(path, ROOT)}:{i}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_input_reference_lists_the_options():
    """`tdse keys` and docs/INPUT.md list every option as run.<name>."""
    ref = cfgmod.input_reference()
    for o in OPTIONS:
        assert f"`run.{o.name}`" in ref
    r = CliRunner().invoke(main, ["keys"])
    assert all(f"run.{o.name} " in r.output for o in OPTIONS)


def test_a_retired_option_is_passed_over():
    """A ``[run]`` key of an option that is gone (a run file written before it went, resumed)
    is passed over; an unknown one is still refused."""
    from tdse.options import RETIRED
    assert "observer_process" in RETIRED and "observer_process" not in RunOptions().as_dict()
    assert parse_options({"observer_process": "on", "graphs": False}) == RunOptions(graphs=False)
    with pytest.raises(ConfigError, match="run.observer = "):
        parse_options({"observer": "on"})


def test_blas_limit_holds_every_blas_of_a_fresh_process_with_one_controller():
    """tdse.options.blas_limit (the run's BLAS threads, the eigensolvers' one thread): its
    first call, in a process that has imported neither NumPy nor SciPy, makes a controller
    that holds every BLAS library threadpoolctl's own scan finds once SciPy's linear algebra
    is imported after it -- NumPy's and SciPy's OpenBLAS, whose wheels carry one each --, and
    their threads are given back after; a later call uses the same controller (a new one a
    call cost ~8.5 ms on a GPU host)."""
    import subprocess
    import sys
    code = (
        "import json\n"
        "from tdse import options\n"
        "from threadpoolctl import threadpool_info\n"
        "def blas():\n"
        "    return sorted((i['filepath'], i['num_threads']) for i in threadpool_info() if i['user_api'] == 'blas')\n"
        "with options.blas_limit(1):\n"       # the first call: neither library imported yet
        "    pass\n"
        "import numpy, scipy.linalg\n"            # (as a run's solvers are, after it)
        "with options.blas_limit(1):\n"
        "    inside = blas()\n"
        "first = options._CONTROLLER[0]\n"
        "after = blas()\n"
        "with options.blas_limit(1, 'blas'):\n"
        "    again = blas()\n"
        "print(json.dumps([inside, after, again, options._CONTROLLER[0] is first, len(options._CONTROLLER)]))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["OPENBLAS_NUM_THREADS"] = "2"      # (a start of 2 threads each, so that 1 is a change)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=str(Path(__file__).resolve().parents[1]), timeout=120)
    assert r.returncode == 0, r.stderr
    inside, after, again, same, count = json.loads(r.stdout.strip().splitlines()[-1])
    names = [p for p, _ in after]
    if not names:
        pytest.skip("no BLAS library seen by threadpoolctl")
    if max(n for _, n in after) < 2:
        pytest.skip("BLAS started on one thread here: a limit of 1 changes nothing to see")
    assert [n for _, n in inside] == [1] * len(names) and [p for p, _ in inside] == names
    assert [n for _, n in after] == [2] * len(names)         # (given back: the start's 2)
    assert [n for _, n in again] == [1] * len(names)
    assert same and count == 1
