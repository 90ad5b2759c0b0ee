"""The ``numpy`` executor: one device, plain matmul (the reference path)."""
from __future__ import annotations

from .registry import register


@register("numpy")
class NumpyExecutor:
    name = "numpy"

    def gemm(self, A, B, C, alpha, beta, **_):
        """C <- alpha*A@B + beta*C in place (C given) or a new array (C is None)."""
        import numpy as np
        prod = np.matmul(A, B)
        if alpha != 1:
            prod *= alpha
        if C is None:
            return prod
        if beta == 0:
            C[...] = prod  # beta = 0: C is not read (BLAS convention; NaNs in C vanish)
        else:
            if beta != 1:
                C *= beta
            C += prod
        return C
