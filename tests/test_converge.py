"""``tdse converge``: the study's numbers (orders, Richardson errors, the recommendation),
its files and refusals, a study on every input, and the recorded studies that README's
accuracy claims rest on (docs/convergence/, checked against the current inputs)."""
from __future__ import annotations

import glob
import hashlib
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from tdse import config as cfgmod
from tdse.ui.cli import main
from tdse.studies.converge import richardson, study

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDED = os.path.join(ROOT, "docs", "convergence")
#: every input but the GPU-only one
INPUTS = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(ROOT, "inputs", "*.toml"))
                if "large" not in p)


def test_richardson_recovers_order_and_limit():
    h = np.array([0.4, 0.2, 0.1])
    Q = (2.5 + 3.0 * h[:, None] ** 2 + np.array([[0.0, 1.0]]) * h[:, None] ** 3)  # 2 quantities
    r = richardson(Q)
    assert abs(r["order"] - 2) < 0.25
    true = np.abs(Q - 2.5).max(axis=1)
    assert np.allclose(r["errors"][:2], true[:2], rtol=0.2)
    assert r["errors"][2] == pytest.approx(true[2], rel=0.4)
    flat = richardson(np.ones((3, 4)))
    assert flat["errors"] == [0.0, 0.0, 0.0]


def test_tiny_study_json_and_picture(tmp_path):
    r = CliRunner().invoke(main, ["converge", os.path.join(ROOT, "inputs", "tiny.toml"), "--out",
                                  str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.load(open(tmp_path / "tiny_converge.json"))
    assert (tmp_path / "tiny_converge.png").stat().st_size > 10_000
    sp = doc["space"]["3"]
    assert abs(sp["populations"]["order"] - 2) < 0.3 and abs(sp["energies"]["order"] - 2) < 0.3
    e = sp["populations"]["errors"]
    assert e[0] > e[1] > e[2] > 0
    assert doc["time"]["populations"]["errors"][0] < 1e-8  # cfm4 at dt = 0.005: tiny
    rec = doc["recommendation"]
    assert rec["found"] and rec["dx"] == 0.2 and rec["dt"] == 0.005
    assert doc["input_numerics"]["meets_target"]
    assert doc["input_sha256"] == hashlib.sha256(
        open(os.path.join(ROOT, "inputs", "tiny.toml")).read().encode()).hexdigest()
    r = CliRunner().invoke(main, ["converge", os.path.join(ROOT, "inputs", "tiny.toml"), "--out",
                                  str(tmp_path)])
    assert r.exit_code == 2 and "exists" in r.output  # never overwritten without --force


@pytest.mark.parametrize("args, key", [(["--levels", "1"], "--levels"), (["--target", "-1"], "--target"),
                                       (["--stencils", "3,4"], "--stencils"), (["--box", "0.5"], "--box")])
def test_bad_options_exit_2_in_one_line(tmp_path, args, key):
    r = CliRunner().invoke(main, ["converge", os.path.join(ROOT, "inputs", "tiny.toml"), "--out",
                                  str(tmp_path), *args])
    assert r.exit_code == 2 and key in r.output and "Traceback" not in r.output


@pytest.mark.slow
@pytest.mark.parametrize("name", INPUTS)
def test_a_study_runs_on_every_input(name):
    """Two levels and two sample times (the recorded studies use three levels and ten)."""
    cfg = cfgmod.load(os.path.join(ROOT, "inputs", f"{name}.toml"))
    doc = study(cfg, levels=2, samples=2)
    for s in list(doc["space"].values()) + [doc["time"]]:
        assert all(np.isfinite(e) for e in s["populations"]["errors"])
    assert np.isfinite(doc["input_numerics"]["estimated_error"])
    assert doc["box"]["n"] > cfg.grid.n


@pytest.mark.parametrize("name", INPUTS)
def test_recorded_study_is_current_for_every_input(name):
    """README's accuracy claims come from these files: each is the study of the input as it
    is now (its hash), with three levels and all three stencils (tiny: its own)."""
    path = os.path.join(RECORDED, f"{name}_converge.json")
    assert os.path.exists(path), f"run: tdse converge inputs/{name}.toml --stencils 3,5,dvr --out docs/convergence"
    doc = json.load(open(path))
    text = open(os.path.join(ROOT, "inputs", f"{name}.toml")).read()
    assert doc["input_sha256"] == hashlib.sha256(text.encode()).hexdigest(), "the input changed since"
    assert doc["levels"] == 3 and len(doc["times"]) == 10
    if name != "tiny":
        assert set(doc["space"]) == {"3", "5", "dvr"}
    readme = open(os.path.join(ROOT, "README.md")).read()
    assert f"`inputs/{name}.toml`" in readme
    assert f"{doc['input_numerics']['estimated_error']:.1e}" in readme, "README's accuracy table"


def test_default_input_meets_its_claim_and_the_thesis_numerics_do_not():
    doc = json.load(open(os.path.join(RECORDED, "h2plus_moving_converge.json")))
    num = doc["input_numerics"]
    assert num["estimated_error"] <= 2e-3 and num["meets_target"]
    assert doc["space"]["dvr"]["populations"]["errors"][0] <= 1e-3
    assert doc["time"]["populations"]["errors"][0] <= 1e-3
    assert abs(doc["time"]["populations"]["order"] - 4) < 0.3      # cfm4
    assert abs(doc["space"]["5"]["populations"]["order"] - 4) < 0.3
    assert abs(doc["space"]["3"]["populations"]["order"] - 2) < 0.3
    fig6 = json.load(open(os.path.join(RECORDED, "thesis_fig6_converge.json")))
    assert fig6["input_numerics"]["estimated_error"] > 0.1 and not fig6["input_numerics"]["meets_target"]
    assert abs(fig6["time"]["populations"]["order"] - 2) < 0.3     # midpoint
