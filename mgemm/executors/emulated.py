"""The ``emulated`` executor: the band schedule on K virtual CPU devices, with race checks.

Each (device, stream) is an in-order queue, as a CUDA stream is.  Ops start and finish
as separate events, in a random (seeded) order that respects stream order and the
declared dependencies, so several ops are "in flight" at once; each run draws how
eagerly ops start rather than finish, so both long overlaps and early completions occur.  An op reads its inputs
when it starts and writes its outputs when it finishes (its destination is poisoned with
NaN meanwhile).  Hazards raise :class:`HazardError`:

* an op starts while an in-flight op writes a region it reads or writes, or reads a
  region it writes (write-after-read / read-after-write / write-after-write in flight);
* an op reads a region whose last completed writer is not the op the schedule says
  produced it (stale or never-written data) -- a missing dependency shows up here.

So a schedule with a dependency removed fails a test instead of passing by luck.
"""
from __future__ import annotations

import numpy as np

from .registry import register
from .common import ScheduleExecutor, resolve_alpha, resolve_beta, resolve_tile, roles

NEVER, USER = -2, -1


class HazardError(RuntimeError):
    pass


def _bbox(regions):
    r0 = min(r.r0 for r in regions)
    r1 = max(r.r1 for r in regions)
    c0 = min(r.c0 for r in regions)
    c1 = max(r.c1 for r in regions)
    return r0, r1, c0, c1


def run_schedule(sched, arrays: dict, alpha, beta, rng, dtype):
    """Execute ``sched`` on host arrays keyed (name, dev); user arrays A, B, C included."""
    for op in sched.ops:
        for d in op.deps + op.after:
            if d >= op.id:
                raise HazardError(f"{op} depends on #{d}, issued later (not a valid issue order)")
    data, writer = {}, {}
    real = np.empty(0, dtype=dtype).real.dtype
    for key, shape in sched.buffers.items():
        if key in arrays:
            data[key] = arrays[key]
            writer[key] = np.full(shape, USER, dtype=np.int64)
        else:
            data[key] = np.full(shape, np.nan,
                                dtype=real if key[0] in sched.real_buffers else dtype)
            writer[key] = np.full(shape, NEVER, dtype=np.int64)
    queues = {}
    for op in sched.ops:
        queues.setdefault((op.dev, op.stream), []).append(op)
    heads = {q: 0 for q in queues}
    busy = set()
    done = set()
    inflight = {}

    def view(store, r):
        return store[(r.buf, r.dev)][r.r0:r.r1, r.c0:r.c1]

    def start(op):
        mine = [(r, False) for r, _ in op.reads] + [(r, True) for r in op.writes]
        for other, _ in inflight.values():
            theirs = [(r, False) for r, _ in other.reads] + [(r, True) for r in other.writes]
            for ra, wa in mine:
                for rb, wb in theirs:
                    if (wa or wb) and ra.overlaps(rb):
                        raise HazardError(f"{op} {'writes' if wa else 'reads'} {ra} while "
                                          f"{other} {'writes' if wb else 'reads'} {rb}")
        for r, producer in op.reads:
            w = view(writer, r)
            want = USER if producer is None else producer
            if not np.all(w == want):
                bad = int(w.flat[np.flatnonzero(w != want)[0]])
                what = "never written" if bad == NEVER else f"last written by #{bad}"
                raise HazardError(f"{op} reads {r}: {what}, expected "
                                  f"{'the input' if producer is None else f'#{producer}'}")
        b = resolve_beta(op.beta, beta)
        a_ = resolve_alpha(op.alpha, alpha)
        if op.kind == "copy":
            r0, r1, c0, c1 = _bbox([r for r, _ in op.reads])
            src = op.reads[0][0]
            res = data[(src.buf, src.dev)][r0:r1, c0:c1].copy()
        elif op.kind == "gemm":   # batch > 1: reads (a_p, b_p) pairs, writes out_p
            res = []
            for p, w in enumerate(op.writes):
                a, bb = view(data, op.reads[2 * p][0]), view(data, op.reads[2 * p + 1][0])
                res.append(a_ * (a @ bb) + (b * view(data, w) if b != 0 else 0))
            if len(op.writes) != op.batch:
                raise HazardError(f"{op}: batch {op.batch} but {len(op.writes)} outputs")
        elif op.kind == "axpby":
            res = view(data, op.reads[0][0]) + b * view(data, op.reads[1][0])
        elif op.kind == "split":
            z = view(data, op.reads[0][0])
            res = np.concatenate([z.real, z.imag, z.real + z.imag], axis=op.axis)
        elif op.kind == "combine":
            t1, t2, t3 = (view(data, r) for r, _ in op.reads[:3])
            res = a_ * ((t1 - t2) + 1j * (t3 - t1 - t2))
            if b != 0:
                res = res + b * view(data, op.writes[0])
        else:
            raise HazardError(f"unknown op kind {op.kind!r}")
        for r in op.writes:
            view(data, r)[...] = np.nan
        inflight[op.id] = (op, res)

    def finish(oid):
        op, res = inflight.pop(oid)
        for r, x in zip(op.writes, res if isinstance(res, list) else [res]):
            if x.shape != r.shape:
                raise HazardError(f"{op}: result shape {x.shape} does not fit {r}")
            view(data, r)[...] = x
            view(writer, r)[...] = op.id
        done.add(op.id)
        busy.discard((op.dev, op.stream))

    total = len(sched.ops)
    # how eagerly ops start rather than finish: eager starting keeps many ops in flight
    # (exposes overlaps), lazy starting lets producers finish early (exposes stale reads)
    eager = float(rng.choice([0.2, 0.5, 0.9, 0.99]))
    # and how fast each stream is: a slow stream (a copy engine behind, a busy GPU) keeps
    # its ops pending or in flight while the others run ahead
    speed = {q: float(rng.choice([0.02, 1.0, 1.0, 50.0])) for q in queues}
    while len(done) < total:
        ready = []
        for q, i in heads.items():
            if q in busy or i >= len(queues[q]):
                continue
            op = queues[q][i]
            if all(d in done for d in op.deps) and all(d in done for d in op.after):
                ready.append(q)
        if not ready and not inflight:
            raise HazardError("deadlock: no op can start (a dependency on a later op in "
                              "the same stream?)")
        if ready and (not inflight or rng.random() < eager):
            kind, what = "s", ready[_pick(rng, [speed[q] for q in ready])]
        else:
            fl = list(inflight)
            kind, what = "f", fl[_pick(rng, [speed[(inflight[o][0].dev, inflight[o][0].stream)]
                                             for o in fl])]
        if kind == "s":
            op = queues[what][heads[what]]
            heads[what] += 1
            busy.add(what)
            start(op)
        else:
            finish(what)


def _pick(rng, weights):
    """An index drawn with probability proportional to ``weights``."""
    x = rng.random() * sum(weights)
    for i, w in enumerate(weights):
        x -= w
        if x < 0:
            return i
    return len(weights) - 1


@register("emulated")
class EmulatedExecutor(ScheduleExecutor):
    name = "emulated"

    def __init__(self, seed=None):
        self.rng = np.random.default_rng(seed)

    def gemm(self, A, B, C, alpha, beta, *, devices=None, tile=None, placement=None,
             method="native", shares=None, **_):
        """C = alpha*A@B + beta*C by the band schedule; ``method``: "native" or "3m"
        (complex operands, Gauss' product fused into the schedule)."""
        if method == "3m" and np.dtype(A.dtype).kind != "c":
            raise ValueError(f"method='3m' needs complex operands, got A.dtype={A.dtype}")
        k_dev = 1 if devices is None else int(devices)
        if k_dev < 1:
            raise ValueError(f"devices must be >= 1 virtual devices, got devices={devices!r}")
        m, k = A.shape
        n = B.shape[1]
        a_dev, b_dev, c_dev = roles(placement, list(range(k_dev)))
        beta_zero = C is None or beta == 0
        if C is None:
            C = np.empty((m, n), dtype=A.dtype)
        T = resolve_tile(tile, m, n, k_dev)
        sched = self.plan(m, k, n, workers=list(range(k_dev)), a_dev=a_dev, b_dev=b_dev,
                          c_dev=c_dev, tile=T, beta_zero=beta_zero, method=method,
                          shares=shares)
        arrays = {("A", a_dev): np.asarray(A), ("B", b_dev): np.asarray(B), ("C", c_dev): C}
        run_schedule(sched, arrays, alpha, beta, self.rng, A.dtype)
        return C
