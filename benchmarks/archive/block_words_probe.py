"""#56 probe (benchmarks/archive): LocalError.block on one GPU by a one-kernel launch a step a thread block (the reverted words-block change: block_words_h200x1_20261130T0058.txt) against the graph of the block's products; needs that change applied to time both.  PYTHONPATH=. python benchmarks/archive/block_words_probe.py"""
import time, numpy as np, cupy as cp
import tdse
from benchmarks import drives
from tdse.numerics.local_error import LocalError
rng = np.random.default_rng(1)
cases = {"atom_hhg": (tdse.load_config("inputs/atom_hhg.toml"), 50), "laser": (drives.make("laser", rng), 10),
         "fast": (drives.make("fast", rng), 10), "abrupt": (drives.make("abrupt", rng), 10), "ramped": (drives.make("ramped", rng), 10)}
for name, (cfg, S) in cases.items():
    n, dt = cfg.grid.n, cfg.time.dt
    U = cp.asarray(rng.normal(size=(S, n)) + 1j * rng.normal(size=(S, n)))
    out = {}
    for mode in ("kernel", "graph"):
        le = LocalError(cfg, cp); le._one_kernel()
        if mode == "graph": le._one = False
        for rep in range(3): le.block(U, 64 * rep, dt)
        cp.cuda.Device().synchronize()
        ts = []
        for rep in range(20):
            t = time.perf_counter(); L = le.block(U, 0, dt); cp.cuda.Device().synchronize(); ts.append(time.perf_counter() - t)
        out[mode] = (min(ts), L)
    d = float(cp.abs(out["kernel"][1] - out["graph"][1]).max() / cp.abs(out["graph"][1]).max())
    print(f"{name} n={n} S={S}: kernel {out['kernel'][0]*1e6:.0f} us, graph {out['graph'][0]*1e6:.0f} us, rel diff {d:.1e}", flush=True)
k = __import__("tdse.backends.cupy.words", fromlist=["x"]).words_kernel(cp, False)
print({a: k.attributes[a] for a in ("max_threads_per_block", "num_regs", "local_size_bytes")})
