"""#54: the one-kernel stencil exponential (tdse_cheb_tile) with and without writing the
step's tap rows itself: its registers and local (spill) bytes, compiled from this tree's
tdse/backends/cupy/chain.py and from an older copy of it given as the argument (the
molecule of inputs/h2plus_moving_large.toml).
Usage: PYTHONPATH=. python benchmarks/archive/tile_registers.py OLD_CHAIN_PY"""
import ast
import sys

import cupy as cp

import tdse
from tdse.backends.cupy import chain
from tdse.backends.cupy.potential import device_v
from tdse.model.grid import points
from tdse.model.potential import batch

cfg = tdse.load_config("inputs/h2plus_moving_large.toml")
V = device_v(batch([cfg.potential], points(cfg.grid), cp).device)


def attrs(source):
    a = cp.RawKernel(source % {"v": V, "reg": 32}, "tdse_cheb_tile").attributes
    return {key: a[key] for key in ("num_regs", "local_size_bytes", "max_threads_per_block")}


tree = ast.parse(open(sys.argv[1]).read())
old = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
           and getattr(n.targets[0], "id", None) == "CHAIN")
print("tdse_cheb_tile now:", attrs(chain.CHAIN))
print("tdse_cheb_tile old:", attrs(old))
