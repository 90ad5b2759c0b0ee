"""#28: expm(A, layout='bands') for a CuPy A without ``devices``, with mgemm/expm.py as it
was at 2157221 (copied to mgemm/_old_expm.py by the caller) and as it is now."""
import traceback

import cupy as cp
import numpy as np

import mgemm

rng = np.random.default_rng(1)
H = rng.standard_normal((64, 64))
A = cp.asarray(-0.05j * (H + H.T))
try:
    from mgemm._old_expm import expm as old
    old(A, layout="bands")
    print("old code: expm(cupy A, layout='bands') ran")
except Exception as e:
    print("old code: expm(cupy A, layout='bands') failed:", type(e).__name__, str(e).splitlines()[0][:150])
U = mgemm.expm(A, layout="bands")
print("new code: ran, max |U - U(gemm layout)| =", float(cp.abs(U - mgemm.expm(A)).max()))
