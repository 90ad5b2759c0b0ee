"""#23: what a ProcessPoolExecutor task costs the process that submits it (its threads pickle
the call and read the result while the loop computes): the loop alone, and with a task of
K small arrays every K calls; python benchmarks/archive/ipc_probe.py (2 cores: ~0.2 ms a
task at K = 1, ~0.04-0.09 ms a call at K = 8)."""
import time, numpy as np, scipy.sparse as sp, concurrent.futures as cf, multiprocessing as mp
def task(t, n, k):
    return [np.random.rand(4, n) for _ in range(k)]
def work(A, x, m):
    for _ in range(m): x = A @ x
    return x
if __name__ == "__main__":
    n = 2048
    A = sp.diags([np.ones(n-1), np.ones(n), np.ones(n-1)], [-1, 0, 1], format="csr") * 0.3
    x = np.ones(n, complex)
    pool = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")); pool.submit(task, 0, 1, 1).result()
    for n_ in (256, 2048):
      for k in (1, 8):
        calls = 2000
        t0 = time.perf_counter()
        for j in range(calls): work(A, x, 10)
        bare = time.perf_counter() - t0
        t0 = time.perf_counter(); futs = []
        for j in range(0, calls, k):
            futs.append(pool.submit(task, j, n_, k))
            if len(futs) > 4: futs.pop(0).result()
            for _ in range(k): work(A, x, 10)
        withp = time.perf_counter() - t0
        print(f"N={n_} chunk {k}: bare {bare:.3f} with pool {withp:.3f} -> {(withp-bare)/calls*1e6:.0f} us per call")
