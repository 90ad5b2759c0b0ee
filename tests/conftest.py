"""Markers: ``gpu`` and ``multi_gpu(n)`` skip where CuPy or enough GPUs are missing;
matplotlib uses Agg everywhere (STYLE.md item 9)."""
import os

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from mgemm.arrays import gpu_count  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_collection_modifyitems(config, items):
    n = gpu_count()
    for item in items:
        if "gpu" in item.keywords and n == 0:
            item.add_marker(pytest.mark.skip(reason="needs CuPy and a CUDA GPU"))
        m = item.get_closest_marker("multi_gpu")
        if m is not None:
            need = m.args[0] if m.args else 2
            if n < need:
                item.add_marker(pytest.mark.skip(reason=f"needs {need} GPUs, found {n}"))


@pytest.fixture(autouse=True)
def _fresh_caches_under_mutation():
    """Mutation runs only (MUTANT_UNDER_TEST names a mutant, or is "stats" while mutmut
    records which tests call each function; tests/README.md): mutmut's forked runner
    inherits the caches its parent filled while it collected coverage, so a mutant in a
    cached builder would never run there, and a builder behind a cache is recorded as
    called by the first test that filled it only (its mutants then run that test alone);
    each test then starts with them empty.  Outside a mutation run nothing is cleared."""
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if mutant == "stats" or "__mutmut_" in mutant:
        import importlib   # mgemm.expm is also the name of the function mgemm exports
        mod = importlib.import_module
        mod("tdse.model.hamiltonian")._CACHE.clear()
        mod("tdse.model.hamiltonian")._STENCIL_PATTERN.clear()
        mod("tdse.numerics.cost")._CACHE.clear()
        for name, fn in (("mgemm.expm", "_peak"), ("mgemm.plan", "_formula_errors"),
                         ("mgemm.formulas", "realized")):
            getattr(getattr(mod(name), fn), "cache_clear", lambda: None)()
    yield


@pytest.fixture
def rng(request):
    # fresh random inputs each test, but reproducible from the test's name
    seed = abs(hash(request.node.nodeid)) % (2**32)
    return np.random.default_rng(seed)


@pytest.fixture
def inputs_dir():
    return os.path.join(ROOT, "inputs")


@pytest.fixture
def interrupt_after(monkeypatch):
    """``interrupt_after(n, signame)`` arms SnapshotWriter.append to raise the signal's
    KeyboardInterrupt after its n-th snapshot (a run stopped mid-way, in process);
    ``disarm()`` of the returned object restores it.  The estimate's pieces are 16 steps
    in the test (every run of it): a snapshot whose e a piece makes reaches the file when
    the piece is made (on the host where pieces span snapshots), and the tests' short runs
    are one piece of 256 steps."""
    import tdse.numerics.adaptive as ad
    from tdse.run.snapshots import SnapshotWriter
    monkeypatch.setattr(ad, "PIECE_STEPS", 16)
    orig = SnapshotWriter.append

    class Armed:
        def disarm(self):
            monkeypatch.setattr(SnapshotWriter, "append", orig)

    def arm(n, signame="SIGTERM"):
        calls = {"n": 0}

        def flaky(self, *a, **k):
            orig(self, *a, **k)
            calls["n"] += 1
            if calls["n"] == n:
                raise KeyboardInterrupt(signame)
        monkeypatch.setattr(SnapshotWriter, "append", flaky)
        return Armed()
    return arm


@pytest.fixture
def run_python_doc():
    """``run_python_doc(index, backend, **names)``: the index-th ```python block of
    docs/PYTHON.md executed with ``names`` defined and its ``backend="numpy"`` (and a
    ``threads=1``) replaced by ``backend``; returns the block's namespace.  The docs'
    examples are then what the tests run, on the CPU and on a GPU (#58 item 0)."""
    import re
    with open(os.path.join(ROOT, "docs", "PYTHON.md"), encoding="utf-8") as fh:
        text = fh.read()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)

    def run(index, backend, **names):
        code = blocks[index].replace('backend="numpy", threads=1', f'backend="{backend}"')
        code = code.replace('backend="numpy"', f'backend="{backend}"')
        ns = dict(names)
        exec(compile(code, f"docs/PYTHON.md block {index}", "exec"), ns)   # noqa: S102 -- our docs
        return ns
    return run


class FileProgress:
    """Under pytest-xdist (``-n 2``: README's test command), one line per test file when its
    last test has reported -- its counts and how many files are done -- in place of the
    workers' dots, which name no file (#58 item 8: per-file progress)."""

    def __init__(self, config):
        self.config = config
        self.total, self.counts, self.outcome = {}, {}, {}

    def pytest_xdist_node_collection_finished(self, node, ids):
        if not self.total:                  # every worker collects the same tests
            for nodeid in ids:
                f = nodeid.split("::")[0]
                self.total[f] = self.total.get(f, 0) + 1

    def pytest_report_teststatus(self, report, config):
        if hasattr(report, "wasxfail"):      # xfail / xpass: pytest's own categories
            return None
        if report.passed or report.skipped:  # the file's line says it; failures keep their F/E
            return report.outcome if report.when == "call" or report.skipped else "", "", ""

    def pytest_runtest_logreport(self, report):
        nodeid = report.nodeid
        if report.when != "teardown":
            if report.failed:
                self.outcome[nodeid] = "failed" if report.when == "call" else "error"
            elif report.skipped or report.when == "call":
                self.outcome.setdefault(nodeid, report.outcome)
            return
        f = nodeid.split("::")[0]
        c = self.counts.setdefault(f, {})
        what = "error" if report.failed else self.outcome.pop(nodeid, "passed")
        c[what] = c.get(what, 0) + 1
        if sum(c.values()) == self.total.get(f):
            done = sum(1 for g, n in self.counts.items() if sum(n.values()) == self.total.get(g))
            counts = ", ".join(f"{n} {k}" for k, n in sorted(c.items()))
            tr = self.config.pluginmanager.getplugin("terminalreporter")
            tr.ensure_newline()
            tr.write_line(f"{f}: {counts}   ({done} of {len(self.total)} files)")


def pytest_configure(config):
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(FileProgress(config), "file-progress")
