"""Balance calibration: rows per GPU from traced runs (``mgemm bench --balance``).

:func:`calibrate` repeats a traced product, each time with the rows per worker that the
previous trace suggests (:func:`mgemm.balance.shares_from_trace`: equal finish times
instead of equal work).  :func:`traced` is one traced ``C = A B`` on the ``cupy``
executor.
"""
from __future__ import annotations

from ..balance import shares_from_trace

__all__ = ["calibrate", "traced"]


def calibrate(run, rounds=2):
    """Shares after ``rounds`` traced runs, each with the shares the previous suggested
    (the first with equal rows).  ``run(shares)`` makes one traced call and returns
    (trace, schedule) -- e.g. :func:`traced`."""
    shares = None
    for _ in range(rounds):
        shares = shares_from_trace(*run(shares))
    return shares


def traced(A, B, C, devs, tile, cm, shares):
    """One traced C = A B on the cupy executor: (trace, schedule)."""
    from .. import executors
    from ..gemm import gemm
    gemm(A, B, C, 1.0, 0.0, devices=devs, tile=tile, complex_method=cm, shares=shares,
         trace=True)
    ex = executors.get("cupy")
    return ex.last_trace, ex.last_schedule
