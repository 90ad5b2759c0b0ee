"""The band-based multi-GPU GEMM as plain data (Choi, Nikolskiy & Stegailov 2020, Alg. 1-2, Fig. 3).

C = alpha*A@B + beta*C with A (M x K), B (K x N), C (M x N), all C-ordered (row-major).

* A is cut into row bands A_i (T rows: contiguous, one copy each -- the source stores A
  transposed in column-major for the same reason), B into column bands B_j (T columns:
  one 2-D copy each).  T is the tile size N_i.
* Worker w takes the bands i with i % G == w (outer loop); for each A_i it runs over all
  B_j (inner loop), computing the tile alpha*A_i B_j into its C band buffer.  A finished
  C band goes to the device holding C, which adds beta*C_i there (C itself never moves);
  on the C device the GEMM writes C_ij = alpha*A_i B_j + beta*C_ij directly, and with
  beta = 0 a band is copied straight into C.
* Double buffering: two slots per operand on each worker.  The next band is copied on the
  worker's ``copy_in`` stream while the current GEMM runs on ``compute``; a slot is
  overwritten only after the GEMM that read it has finished (an explicit dependency =
  a CUDA event), and a C band slot is reused only after its send finished.

A :class:`Schedule` is a list of :class:`Op` in a valid issue order (every dependency
appears earlier; ops on one (device, stream) run in list order, as a CUDA stream does).
Executors (``emulated``, ``cupy``) run it; nothing here imports a GPU library.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["Region", "Op", "Schedule", "plan_gemm", "auto_tile", "PLACEMENTS"]

PLACEMENTS = ("one", "three")


@dataclass(frozen=True)
class Region:
    """A rectangle [r0:r1, c0:c1] of a named buffer on a device."""
    buf: str
    dev: int
    r0: int
    r1: int
    c0: int
    c1: int

    @property
    def shape(self):
        return (self.r1 - self.r0, self.c1 - self.c0)

    def overlaps(self, o: "Region") -> bool:
        return (self.buf == o.buf and self.dev == o.dev and self.r0 < o.r1 and o.r0 < self.r1
                and self.c0 < o.c1 and o.c0 < self.c1)

    def __str__(self):
        return f"{self.buf}@{self.dev}[{self.r0}:{self.r1},{self.c0}:{self.c1}]"


@dataclass
class Op:
    """One command.  kind: 'copy' (dst <- src), 'gemm' (out <- alpha*a@b + beta*out),
    'axpby' (out <- beta*out + src).  ``reads`` pairs each read region with the id of the
    op expected to have written it last (None: the user's input)."""
    id: int
    kind: str
    dev: int
    stream: str
    reads: list
    writes: list
    deps: list = field(default_factory=list)
    beta: float | complex = 0.0
    label: str = ""

    def __str__(self):
        return f"#{self.id} {self.kind} on {self.dev}/{self.stream} ({self.label})"


@dataclass
class Schedule:
    m: int
    k: int
    n: int
    tile: int
    workers: list
    a_dev: int
    b_dev: int
    c_dev: int
    beta_zero: bool
    ops: list
    buffers: dict  # (name, dev) -> shape

    def explain(self) -> str:
        kinds = {}
        for op in self.ops:
            kinds[op.kind] = kinds.get(op.kind, 0) + 1
        mb, nb = math.ceil(self.m / self.tile), math.ceil(self.n / self.tile)
        return (f"C[{self.m}x{self.n}] = A[{self.m}x{self.k}] B[{self.k}x{self.n}]: tile {self.tile}, "
                f"{mb}x{nb} tiles on workers {self.workers}; A on {self.a_dev}, B on {self.b_dev}, "
                f"C on {self.c_dev}; ops: " + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())))

    def bytes_per_device(self, itemsize: int) -> dict:
        out = {}
        for (name, dev), shape in self.buffers.items():
            out[dev] = out.get(dev, 0) + shape[0] * shape[1] * itemsize
        return out


def auto_tile(m: int, n: int, g: int) -> int:
    """Default tile until a machine profile exists: a power of two near M/(4G), within
    [256, 4096] and at most max(M, N) (the source found 2048 best for N = 32768 on 4 GPUs)."""
    target = max(1, m // (4 * max(g, 1)))
    t = 2 ** round(math.log2(target)) if target > 1 else 1
    return int(max(min(t, 4096), min(256, max(m, n))))


def plan_gemm(m: int, k: int, n: int, *, workers, a_dev: int, b_dev: int, c_dev: int,
              tile: int, beta_zero: bool) -> Schedule:
    """Build the schedule (see the module docstring).  ``workers``: device ids computing."""
    if min(m, k, n) < 1:
        raise ValueError(f"matrix sizes must be >= 1, got m={m}, k={k}, n={n}")
    if not (isinstance(tile, int) and tile >= 1):
        raise ValueError(f"tile must be an integer >= 1, got tile={tile!r}")
    workers = list(workers)
    if not workers or len(set(workers)) != len(workers):
        raise ValueError(f"workers must be distinct device ids, got workers={workers}")
    T = tile
    mb, nb = math.ceil(m / T), math.ceil(n / T)
    rows = lambda i: (i * T, min(m, (i + 1) * T))  # noqa: E731
    cols = lambda j: (j * T, min(n, (j + 1) * T))  # noqa: E731
    ops: list[Op] = []
    buffers = {("A", a_dev): (m, k), ("B", b_dev): (k, n), ("C", c_dev): (m, n)}

    def add(kind, dev, stream, reads, writes, deps=(), beta=0.0, label=""):
        op = Op(len(ops), kind, dev, stream, list(reads), list(writes),
                sorted({d for d in deps if d is not None}), beta, label)
        ops.append(op)
        return op.id

    # Per-worker state, advanced in lock-step so the issue order interleaves workers
    # (each worker's next copies are issued right after its current GEMM, Alg. 2).
    class W:
        pass

    ws = []
    for w in workers:
        s = W()
        s.dev, s.bands = w, [i for i in range(mb) if i % len(workers) == workers.index(w)]
        s.last_read_A = [None, None]    # last gemm reading bufA slot
        s.last_read_B = [None, None]
        s.last_send_C = [None, None]    # last op reading bufC slot (the send)
        s.b_count = 0
        if w != a_dev:
            buffers[("bufA", w)] = (2 * T, k)
        if w != b_dev:
            buffers[("bufB", w)] = (2 * k, T)
        if w != c_dev:
            buffers[("bufC", w)] = (2 * T, n)
            if not beta_zero:
                buffers[(f"recvC{w}", c_dev)] = (2 * T, n)
        ws.append(s)
    last_reduce = {}  # (w, slot) -> axpby op reading recvC slot

    def a_region(s, li, i):
        r0, r1 = rows(i)
        if s.dev == a_dev:
            return Region("A", a_dev, r0, r1, 0, k), None
        slot = li % 2
        dst = Region("bufA", s.dev, slot * T, slot * T + (r1 - r0), 0, k)
        cid = add("copy", s.dev, "copy_in", [(Region("A", a_dev, r0, r1, 0, k), None)], [dst],
                  deps=[s.last_read_A[slot]], label=f"A{i}->w{s.dev}")
        return dst, cid

    def b_region(s, j):
        c0, c1 = cols(j)
        if s.dev == b_dev:
            return Region("B", b_dev, 0, k, c0, c1), None, None
        slot = s.b_count % 2
        s.b_count += 1
        dst = Region("bufB", s.dev, slot * k, slot * k + k, 0, c1 - c0)
        cid = add("copy", s.dev, "copy_in", [(Region("B", b_dev, 0, k, c0, c1), None)], [dst],
                  deps=[s.last_read_B[slot]], label=f"B{j}->w{s.dev}")
        return dst, cid, slot

    steps = max(len(s.bands) for s in ws)
    for li in range(steps):
        for s in ws:
            if li >= len(s.bands):
                continue
            i = s.bands[li]
            r0, r1 = rows(i)
            aR, a_id = a_region(s, li, i)
            cslot = li % 2
            gemm_ids = []
            for j in range(nb):
                c0, c1 = cols(j)
                bR, b_id, b_slot = b_region(s, j)
                if s.dev == c_dev:
                    out = Region("C", c_dev, r0, r1, c0, c1)
                    beta = 0.0 if beta_zero else None
                    deps = [a_id, b_id]
                else:
                    out = Region("bufC", s.dev, cslot * T, cslot * T + (r1 - r0), c0, c1)
                    beta = 0.0
                    deps = [a_id, b_id, s.last_send_C[cslot]]
                reads = [(aR, a_id), (bR, b_id)]
                if s.dev == c_dev and not beta_zero:
                    reads.append((out, None))
                gid = add("gemm", s.dev, "compute", reads, [out], deps=deps,
                          beta=("beta" if beta is None else beta), label=f"C{i},{j}")
                gemm_ids.append(gid)
                if b_slot is not None:
                    s.last_read_B[b_slot] = gid
            if a_id is not None:
                s.last_read_A[li % 2] = gemm_ids[-1]
            if s.dev == c_dev:
                continue
            # the band's GEMMs run in order on one stream: waiting for the last is enough
            band = Region("bufC", s.dev, cslot * T, cslot * T + (r1 - r0), 0, n)
            band_reads = [(Region(band.buf, band.dev, band.r0, band.r1, *cols(j)), g)
                          for j, g in zip(range(nb), gemm_ids)]
            if beta_zero:
                sid = add("copy", s.dev, "copy_out", band_reads,
                          [Region("C", c_dev, r0, r1, 0, n)], deps=gemm_ids[-1:], label=f"C{i}->C")
                s.last_send_C[cslot] = sid
            else:
                recv = Region(f"recvC{s.dev}", c_dev, cslot * T, cslot * T + (r1 - r0), 0, n)
                sid = add("copy", s.dev, "copy_out", band_reads, [recv],
                          deps=[gemm_ids[-1], last_reduce.get((s.dev, cslot))],
                          label=f"C{i}->recv")
                s.last_send_C[cslot] = sid
                cR = Region("C", c_dev, r0, r1, 0, n)
                rid = add("axpby", c_dev, f"reduce{s.dev}", [(recv, sid), (cR, None)], [cR],
                          deps=[sid], beta="beta", label=f"C{i} = beta C{i} + band")
                last_reduce[(s.dev, cslot)] = rid
    return Schedule(m, k, n, T, workers, a_dev, b_dev, c_dev, beta_zero, ops, buffers)
