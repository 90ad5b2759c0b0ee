"""Row shares from a traced run: equal finish times instead of equal work.

The source's schedule gives every worker the same number of A rows.  On real GPUs the
workers are not equal: the GPUs holding A and B also split (3m) and send every band,
and the GPUs that receive their first bands last start later (measured on 4 H200,
3m, N = 32768: the B source finished ~25 ms after the others, benchmarks/README.md).
From a trace (``gemm(..., trace=True)``) each worker's compute lane gives its start
s_w and its rate v_w = rows_w / (end_w - s_w); the rows that make every lane end at one
time t are

    r_w = v_w (t - s_w),   t = (M + sum_w v_w s_w) / sum_w v_w   (so sum_w r_w = M),

returned as the weights ``shares`` of :func:`mgemm.schedule.band_rows` (plain data;
no GPU import here; the traced calibration runs are :mod:`mgemm.tools.calibrate`).
"""
from __future__ import annotations

__all__ = ["lanes", "shares_from_trace"]


def lanes(trace, workers):
    """Per worker: (first compute start, last compute end, busy) in ms, from trace rows
    (dicts with dev, stream, start_ms, end_ms; only the ``compute`` stream counts)."""
    out = {}
    for w in workers:
        rs = [r for r in trace if r["dev"] == w and r["stream"] == "compute"]
        if not rs:
            raise ValueError(f"the trace has no compute ops on worker {w}")
        out[w] = (min(r["start_ms"] for r in rs), max(r["end_ms"] for r in rs),
                  sum(r["end_ms"] - r["start_ms"] for r in rs))
    return out


def shares_from_trace(trace, sched):
    """Rows per worker (as shares) that would make the traced run's compute lanes end
    together (see the module docstring).  ``sched``: the traced run's schedule."""
    rows = dict(zip(sched.workers, sched.rows_per_worker()))
    act = [w for w in sched.workers if rows[w] > 0]
    ln = lanes(trace, act)
    v = {w: rows[w] / max(ln[w][1] - ln[w][0], 1e-9) for w in act}
    t = (sched.m + sum(v[w] * ln[w][0] for w in act)) / sum(v.values())
    return [max(0.0, v[w] * (t - ln[w][0])) if w in v else 0.0 for w in sched.workers]
