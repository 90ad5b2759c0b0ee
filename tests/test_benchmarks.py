"""The benchmark runner (``python -m benchmarks``): result files carry the command,
machine and versions; the index renders every recorded result; compare lines up two runs.
Timings themselves are not asserted here (performance lives in the recorded results)."""
from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import pytest

from benchmarks import index
from benchmarks.runner import machine_tag, main
from benchmarks.suites import SUITES
from mgemm.arrays import gpu_count

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_list_names_every_suite(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("engine", "expm", "expm-cpu", "tdse", "tune", "gpu-tests"):
        assert name in out
    assert set(SUITES) >= {"engine", "expm", "expm-cpu", "tdse", "tune", "gpu-tests"}


def test_cpu_suite_writes_a_traceable_result(tmp_path, capsys):
    assert main(["expm-cpu", "--n", "32", "--repeat", "2", "--out", str(tmp_path)]) == 0
    (path,) = glob.glob(str(tmp_path / "expm-cpu_cpu*_*.json"))
    doc = json.loads(Path(path).read_text())
    assert doc["kind"] == "expm-cpu"
    assert doc["command"].startswith("python -m benchmarks expm-cpu")
    assert doc["machine"]["cpus"] >= 1 and "numpy" in doc["versions"] and "mgemm" in doc["versions"]
    # the CPU's model, which sets a GPU run's host-bound rows: /proc/cpuinfo's where Linux has it
    if os.path.exists("/proc/cpuinfo"):
        models = [ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name")]
        assert doc["machine"]["cpu_model"] == (models[0] if models else None)
    names = [r["name"] for r in doc["rows"]]
    assert names[0] == "scipy.linalg.expm" and "mgemm auto" in names
    for r in doc["rows"]:  # every case checked against the eigendecomposition
        assert r["rel_error"] < 1e-11 and r["seconds"] > 0
    assert "saved" in capsys.readouterr().out
    lines = index.compare(path, path)
    assert any(line.rstrip().endswith("1.000") for line in lines[3:])


@pytest.mark.skipif(gpu_count() > 0, reason="checks the refusal on a machine without GPUs")
def test_gpu_suite_without_gpu_exits_2(tmp_path, capsys):
    assert main(["engine", "--out", str(tmp_path)]) == 2
    assert "needs CuPy and a GPU" in capsys.readouterr().err
    assert not os.listdir(tmp_path)


def test_index_renders_every_recorded_result():
    text = index.tables()
    files = [os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "benchmarks", "results", "*.json"))]
    docs = [f for f in files if json.loads(Path(ROOT, "benchmarks", "results", f).read_text())
            .get("kind") != "mgemm-profile"]
    assert docs
    for f in docs:
        assert f"### {f}" in text
    assert "rows of kind" not in text  # every kind has a renderer


def test_readme_tables_are_the_generated_ones():
    text = Path(os.path.join(ROOT, "benchmarks", "README.md")).read_text()
    a, b = text.index(index.BEGIN) + len(index.BEGIN), text.index(index.END)
    assert text[a:b].strip() == index.tables().strip(), "run `python -m benchmarks index`"


def test_results_md_is_the_generated_current_numbers():
    text = Path(os.path.join(ROOT, "benchmarks", "RESULTS.md")).read_text()
    a, b = text.index(index.BEGIN) + len(index.BEGIN), text.index(index.END)
    assert text[a:b].strip() == index.current().strip(), "run `python -m benchmarks index`"


def test_current_numbers_take_the_newest_plain_file_per_suite_and_machine(tmp_path, monkeypatch):
    """#54 item 5: RESULTS.md's rows are the newest result file of each suite and machine; a
    labelled file (a baseline tree, a variant) only where no plainly named one exists."""
    def doc(name, date, gpus, value):
        path = tmp_path / name
        path.write_text(json.dumps({"kind": "scan", "date": date, "command": f"cmd {name}",
                                    "machine": {"gpus": gpus, "cpus": 2},
                                    "rows": [{"input": "a.toml", "backend": "cupy", "members": 8,
                                              "scan_seconds": value}]}))
        return str(path)
    files = [doc("scan_h200x1_20261101T000000.json", "2026-11-01", ["NVIDIA H200"], 1.0),
             doc("scan_h200x1_20261102T000000.json", "2026-11-02", ["NVIDIA H200"], 2.0),
             doc("scan_h200x1_20261103T000000_base_old.json", "2026-11-03", ["NVIDIA H200"], 3.0),
             doc("scan_cpu2_20261104T000000_variant.json", "2026-11-04", [], 4.0)]
    monkeypatch.setattr(index, "_files", lambda: sorted(files))
    monkeypatch.setattr(index, "render", lambda d: [f"table of {d['command']}"])   # (each suite's own)
    text = index.current()
    rows = [line for line in text.splitlines() if line.startswith("| scan |")]
    assert len(rows) == 2
    assert "scan_h200x1_20261102T000000.json" in rows[1] and "= 2" in rows[1]
    assert "scan_cpu2_20261104T000000_variant.json" in rows[0] and "= 4" in rows[0]
    assert "table of cmd scan_h200x1_20261102T000000.json" in text and "base_old" not in text


def test_a_failed_index_leaves_the_readme_as_it_was(tmp_path, monkeypatch):
    """The tables are made before the README is opened: a result file they cannot read
    (here a stand-in failure) leaves the README whole -- it once truncated it to its text
    before the tables."""
    readme = tmp_path / "README.md"
    before = f"intro\n{index.BEGIN}\nold tables\n{index.END}\nafter\n"
    readme.write_text(before)

    def broken():
        raise AttributeError("'list' object has no attribute 'get'")
    monkeypatch.setattr(index, "tables", broken)
    with pytest.raises(AttributeError):
        index.write_readme(str(readme))
    assert readme.read_text() == before
    monkeypatch.setattr(index, "tables", lambda: "new tables")
    index.write_readme(str(readme))
    assert readme.read_text() == f"intro\n{index.BEGIN}\nnew tables\n{index.END}\nafter\n"
    assert os.listdir(tmp_path) == ["README.md"]


@pytest.mark.parametrize("gpus, tag", [(["NVIDIA H200"] * 4, "h200x4"),
                                       (["NVIDIA H100 80GB HBM3"], "h100x1"),
                                       ([], "cpu2")])
def test_machine_tag(gpus, tag):
    assert machine_tag({"gpus": gpus, "cpus": 2}) == tag


def test_run_overhead_refuses_bad_values_in_one_line(capsys):
    """run-overhead: a populations cadence that is not a multiple of observables_every is
    the input's ConfigError as one line (exit 2); --steps below 3, a negative
    --populations-every, --threads 0 and --start-up-repeat 0 are refused by the argument
    parser (exit 2) before any work."""
    from benchmarks.runner import main
    assert main(["run-overhead", "--n", "64", "--stencils", "3", "--steps", "6", "--every", "2",
                 "--populations-every", "3", "--out", "/nonexistent"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "output.populations_every" in err[0] and "3" in err[0]
    for bad in (["--steps", "2"], ["--populations-every", "-1"], ["--steps", "x"], ["--threads", "0"],
                ["--companion=no"], ["--start-up-repeat", "0"], ["--start-up-repeat", "two"]):
        with pytest.raises(SystemExit) as e:
            main(["run-overhead", *bad])
        assert e.value.code == 2
        msg = capsys.readouterr().err
        assert "must be >= " in msg or "not an integer" in msg or "--companion" in msg


def test_time_error_refuses_bad_ladder_values_in_one_line(capsys):
    """time-error's --ladder-most and --reference-factor: 0, 1, negative or not an integer
    are refused by the argument parser (exit 2, the value named) before any work."""
    from benchmarks.runner import main
    for bad in (["--ladder-most", "0"], ["--ladder-most", "1"], ["--reference-factor", "-640"],
                ["--reference-factor", "1.5"], ["--reference-factor", "x"]):
        with pytest.raises(SystemExit) as e:
            main(["time-error", "--kinds", *bad])
        assert e.value.code == 2
        msg = capsys.readouterr().err
        assert bad[0] in msg and ("must be >= 2" in msg or "not an integer" in msg), msg


def test_cli_phases_split_a_runs_wall_by_its_file_timeline():
    """run-overhead's split of a CLI run's wall (cli_phases): each phase from the mark before
    it to its own, in order from the spawn to the process's end, their sum the whole wall; a
    file without prepare's marks (a plan made elsewhere) puts prepare at run() entered."""
    from benchmarks.suites import CLI_PHASES, cli_phases
    tl = {"run": 100.5, "prepare": [100.6, 102.0], "loop": 102.25, "loop_end": 110.0, "close": 110.125}
    got = cli_phases(100.0, 111.0, tl)
    assert list(got) == [name for name, _ in CLI_PHASES]
    assert got == pytest.approx({"before_prepare": 0.6, "prepare": 1.4, "set_up": 0.25,
                                 "loop": 7.75, "to_close": 0.125, "close_and_exit": 0.875})
    assert sum(got.values()) == pytest.approx(11.0)
    bare = cli_phases(100.0, 111.0, {k: v for k, v in tl.items() if k != "prepare"})
    assert bare["before_prepare"] == pytest.approx(0.5) and bare["prepare"] == 0.0
    assert bare["set_up"] == pytest.approx(1.75)


def test_start_up_splits_a_runs_wall_into_its_phases(tmp_path):
    """#59 item 2's suite on tiny.toml, one run: the phases from the file's timeline add up
    to the wall measured around the process (each >= 0), the printed time is the loop's
    share of it, and the index renders the row."""
    assert main(["start-up", "--inputs", "tiny", "--repeat", "1", "--out", str(tmp_path)]) == 0
    (path,) = glob.glob(str(tmp_path / "start-up_cpu*_*.json"))
    doc = json.loads(Path(path).read_text())
    (r,) = doc["rows"]
    assert r["input"] == "tiny" and r["walls_each"] == [r["wall_seconds"]]
    assert min(r["phases"].values()) >= 0
    assert sum(r["phases"].values()) == pytest.approx(r["wall_seconds"], abs=0.05)
    assert 0 < r["printed_seconds"] <= r["phases"]["loop"] + r["phases"]["to_close"] + 0.01
    assert r["printed_share"] == pytest.approx(r["printed_seconds"] / r["wall_seconds"])
    assert any(line.startswith("| tiny | numpy |") for line in index.render(doc))


def test_the_scan_suite_states_its_seconds_over_its_operator_products(tmp_path):
    """#59 item 6: the scan row holds each batch's members and block Chebyshev terms and the
    scan's seconds over its operator products alone (the terms x one product of the
    batch's block, timed in the same call): more than 1 -- the scan does that work and
    more, here mostly its set-up); without the terms (a batch read back from an older
    part) no ratio is made."""
    from benchmarks.suites import _operator_floor
    assert main(["scan", "--input", "inputs/atom_hhg.toml", "--members", "3", "--t-end", "2",
                 "--batch", "2", "--out", str(tmp_path)]) == 0
    (path,) = glob.glob(str(tmp_path / "scan_cpu*_*.json"))
    row = json.loads(Path(path).read_text())["rows"][0]
    assert row["batch_members"] == [2, 1] and all(t > 0 for t in row["batch_chebyshev_terms"])
    assert row["operator_floor_seconds"] > 0 and row["scan_over_operator_floor"] > 1.0
    import tdse
    cfg = tdse.load_config("inputs/atom_hhg.toml").with_value("time.t_end", 2.0)
    assert _operator_floor(cfg, [2, 1], [10, None], "numpy") is None
    assert _operator_floor(cfg, [2], [10], "numpy") > 0
