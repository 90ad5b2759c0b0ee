"""#54: where a GPU run's loop thread is, by sampling its stack every millisecond from a
thread of this process (sys._current_frames; cProfile on Python 3.12 sees every thread's
calls as one: the planning and writing threads' calls came out under the loop's):
INPUT with method auto, no time error, STEPS steps, populations every EVERY, one fresh
process through tdse.simulate (a file written).  Samples taken while the run's evolve is
under way; each counted by its innermost frame, and by its innermost three frames of
tdse/mgemm code.

    python benchmarks/archive/loop_sampler.py INPUT STEPS EVERY [BACKEND [KEY=VALUE ...]] [lines]
"""
import collections, sys, tempfile, threading, time
import tdse
import tdse.run.driver as driver

lines = "lines" in sys.argv          # each sample by its line, not its function
sys.argv = [a for a in sys.argv if a != "lines"]
path, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
backend = sys.argv[4] if len(sys.argv) > 4 else "cupy"
cfg = tdse.load_config(path)
cfg = (cfg.with_value("propagator.method", "auto").with_value("propagator.time_error", "none")
       .with_value("time.t_end", steps * cfg.time.dt).with_value("output.populations_every", every))
for kv in sys.argv[5:]:
    key, value = kv.split("=")
    cfg = cfg.with_value(key, int(value) if value.isdigit() else value)
inner, ours, on = collections.Counter(), collections.Counter(), threading.Event()
main = threading.main_thread().ident


def where(f):
    return f"{f.f_code.co_filename.split('/')[-1]}:{f.f_code.co_name}" + (f":{f.f_lineno}" if lines else "")


def sample():
    while True:
        on.wait()
        f = sys._current_frames().get(main)
        if f is not None and on.is_set():
            inner[where(f)] += 1
            chain = []
            while f is not None and len(chain) < 3:
                name = f.f_code.co_filename
                if "/tdse/" in name or "/mgemm/" in name:
                    chain.append(where(f))
                f = f.f_back
            ours[" < ".join(chain)] += 1
        time.sleep(0.001)


threading.Thread(target=sample, daemon=True).start()
real = driver.evolve


def sampled(*a, **k):
    on.set()
    t0 = time.perf_counter()
    try:
        return real(*a, **k)
    finally:
        on.clear()
        print(f"# evolve {time.perf_counter() - t0:.3f} s ({(time.perf_counter() - t0) / steps * 1e6:.1f} us a step)")


driver.evolve = sampled
idle = collections.Counter()
if backend == "cupy":
    import cupy as cp
    from tdse.run import loop as _loop
    real_advance = _loop.advance

    def advance(*a, **k):           # the device idle when the loop comes to step again?
        ev = cp.cuda.Event(disable_timing=True)
        ev.record()
        idle[ev.done] += 1
        return real_advance(*a, **k)
    _loop.advance = advance
tdse.simulate(cfg, backend=backend, out=tempfile.mkdtemp(), force=True)
total = sum(inner.values())
print(f"# {path} {steps} steps, populations every {every}: {total} samples of the loop thread")
for k, v in inner.most_common(25):
    print(f"{v / total:6.1%}  {k}")
if idle:
    print(f"# advance calls that found the device idle (the sinks' work before them starved it): {idle[True]} of {sum(idle.values())}")
print("# by the innermost three tdse/mgemm frames")
for k, v in ours.most_common(30):
    print(f"{v / total:6.1%}  {k}")
