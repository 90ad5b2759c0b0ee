"""The bare GPU step loop timed again and again in one process after its plan is made, with
the GPU's clocks, temperature and power sampled beside each (#23 item 3: run-overhead's
bare loop took 141 us a step right after `prepare` and 127.5 us after the CLI's runs, in
the same process, one H100; the DVR's 12.3 against 10.1 ms).  REPS loops of STEPS steps,
PAUSE seconds of sleep in the middle.

    python -m benchmarks.archive.bare_drift INPUT N STENCIL STEPS REPS PAUSE [METHOD]

(as a module, so that the run's eigenpairs workers may be spawned as in the suite; METHOD
"auto" times the candidates in `prepare`, as run-overhead's plans do)
"""
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

from run_profile import case_config  # noqa: E402


def smi():
    q = "clocks.sm,clocks.mem,temperature.gpu,power.draw,pstate,clocks_throttle_reasons.active"
    r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                       capture_output=True, text=True)
    return r.stdout.strip()


if __name__ == "__main__":
    from benchmarks.suites import _bare_steps
    import tdse
    inp, n, st, steps, reps, pause = sys.argv[1:7]
    method = sys.argv[7] if len(sys.argv) > 7 else "chebyshev"
    t0 = time.perf_counter()
    cfg = case_config(inp, n, st, int(steps) + 4, 0, method)
    plan = tdse.prepare(cfg, backend="cupy", check_resolution=False)
    print(f"# {inp}, N = {n}, {st}, {steps} steps a loop, method {method} -> "
          f"{plan.config.propagator.method}; prepared in {time.perf_counter() - t0:.2f} s; "
          f"TDSE_EIGENPAIRS_AHEAD={os.environ.get('TDSE_EIGENPAIRS_AHEAD', '-')}")
    for r in range(int(reps)):
        if r == int(reps) // 2:
            time.sleep(float(pause))
            print(f"  (slept {pause} s)")
        c = time.process_time()
        s, stp, nodes, _ = _bare_steps(plan, int(steps))
        c = time.process_time() - c
        g = stp.propagator.graph
        print(f"  t = {time.perf_counter() - t0:6.1f} s: {s * 1e6:8.1f} us a step, the process's CPU "
              f"{c / int(steps) * 1e6:.1f} us a step, Chebyshev terms a step "
              f"{stp.cheb_terms / (int(steps) + 2):.2f}, graph {bool(g)}, nodes {nodes}, "
              f"threads {threading.active_count()}   [{smi()}]")
