"""What a `tdse run` process's end costs after its work (tdse.ui.command._end_now): the
parent spawns ``python exit_cost.py --child VARIANT STAMPS tdse-args...`` per run, the child
runs the command as ``python -m tdse`` does, with its exit function wrapped to stamp the
moment the command's work and every other exit function are done; the parent stamps the
moment the process is gone.  Variants: "python" (Python's own teardown: the interpreter's
objects and modules, then the libraries' exit functions -- the CUDA context's), "fast"
(os._exit there, as shipped), "free" (CuPy's device and pinned pools freed, then os._exit).

    python benchmarks/archive/exit_cost.py REPEAT INPUT [tdse run options...]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def child(variant, stamps, args):
    sys.path.insert(0, ROOT)
    from tdse.ui import command
    shipped = command._end_now

    def wrapped():
        if variant == "free" and "cupy" in sys.modules:
            import cupy
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()
        with open(stamps, "w") as f:
            json.dump({"end": time.time()}, f)
        if variant != "python":
            shipped()
    command._end_now = wrapped
    sys.argv = ["tdse", *args]
    command.main()


def parent(repeat, inp, *opts):
    d = tempfile.mkdtemp()
    sf = os.path.join(d, "stamps.json")
    res = {}
    for _ in range(int(repeat)):
        for v in ("python", "fast", "free"):
            t0 = time.time()
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", v, sf, "run",
                                inp, "--out", d, "--force", "--quiet", "--no-plots", *opts],
                               capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
            gone = time.time()
            end = json.load(open(sf))["end"]
            os.remove(sf)
            res.setdefault(v, []).append((gone - t0, gone - end, r.returncode))
    import statistics as st
    print(f"{os.path.basename(inp)} {' '.join(opts)}: wall and the exit after the work, medians of {repeat}")
    for v, rows in res.items():
        print(f"  {v:6s} wall {st.median(r[0] for r in rows):.3f} s, exit {st.median(r[1] for r in rows):.3f} s "
              f"(each {' '.join(f'{r[1]:.3f}' for r in rows)}), rc {sorted(set(r[2] for r in rows))}")


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        parent(*sys.argv[1:])
