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

A :class:`Schedule` is a list of :class:`Op` in a valid issue order (every dependency,
and every pacing edge ``after``, appears earlier; ops on one (device, stream) run in list order, as a CUDA stream does).
Executors (``emulated``, ``cupy``) run it; nothing here imports a GPU library.

``method="3m"`` (complex A, B, C) is Gauss' product fused into the engine: the source
devices split their operands band by band into real stacks A3 = [Re A | Im A | Re A + Im A]
(M x 3K) and B3 = [Re B; Im B; Re B + Im B] (3K x N, stored band by band: each column
band's 3K x T stack contiguous) (``split`` ops), so a band or one of its real planes is one
contiguous (B) or 2-D (A) copy; each tile is three real GEMMs into a worker's tile
buffer T = [T1 | T2 | T3] and one ``combine`` op,
C_ij = alpha (T1 - T2 + i (T3 - T1 - T2)) + beta C_ij, written into the complex C band.
The bands carry 3/2 of the complex bytes; the GEMMs do 3/4 of the real multiply-adds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["Region", "Op", "Schedule", "plan_gemm", "band_rows", "auto_tile", "PLACEMENTS",
           "METHODS"]

PLACEMENTS = ("one", "three")
METHODS = ("native", "3m")


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
    'axpby' (out <- beta*out + src); for 3m also 'split' (complex src -> its real stack
    [Re, Im, Re + Im] along ``axis``) and 'combine' (out <- alpha*(T1 - T2 + i(T3 - T1 - T2))
    + beta*out from the three real tiles read).  ``reads`` pairs each read region with the
    id of the op expected to have written it last (None: the user's input).  ``alpha`` and
    ``beta`` are numbers or the placeholders 'alpha'/'beta' (the call's values)."""
    id: int
    kind: str
    dev: int
    stream: str
    reads: list
    writes: list
    deps: list = field(default_factory=list)
    beta: float | complex = 0.0
    label: str = ""
    alpha: float | complex | str = "alpha"
    axis: int = 0
    #: ops this one waits for only to pace it (not needed for a correct result)
    after: list = field(default_factory=list)
    #: 'gemm' over ``batch`` equally spaced planes (3m): reads (a_p, b_p) pairs in
    #: order, writes out_p; one strided-batched GEMM call on a GPU
    batch: int = 1

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
    method: str = "native"
    #: buffer names holding the real type of a complex product (3m)
    real_buffers: frozenset = frozenset()
    #: the A row bands [(r0, r1)] and each worker's band indices (see band_rows)
    bands: list = field(default_factory=list)
    bands_of: list = field(default_factory=list)
    shares: list | None = None

    def rows_per_worker(self) -> list:
        """A rows each worker computes, in ``workers`` order."""
        return [sum(self.bands[i][1] - self.bands[i][0] for i in b) for b in self.bands_of]

    def explain(self) -> str:
        kinds = {}
        for op in self.ops:
            kinds[op.kind] = kinds.get(op.kind, 0) + 1
        mb, nb = len(self.bands), math.ceil(self.n / self.tile)
        how = "" if self.method == "native" else f" ({self.method})"
        rows = ""
        if self.shares is not None:
            rows = " (rows per worker " + ", ".join(
                f"{w}: {r}" for w, r in zip(self.workers, self.rows_per_worker())) + ")"
        return (f"C[{self.m}x{self.n}] = A[{self.m}x{self.k}] B[{self.k}x{self.n}]{how}: tile {self.tile}, "
                f"{mb}x{nb} tiles on workers {self.workers}{rows}; A on {self.a_dev}, B on {self.b_dev}, "
                f"C on {self.c_dev}; ops: " + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())))

    def itemsize(self, name: str, itemsize: int) -> int:
        """Bytes per element of buffer ``name`` when the product's dtype has ``itemsize``."""
        return itemsize // 2 if name in self.real_buffers else itemsize

    def bytes_per_device(self, itemsize: int) -> dict:
        out = {}
        for (name, dev), shape in self.buffers.items():
            out[dev] = out.get(dev, 0) + shape[0] * shape[1] * self.itemsize(name, itemsize)
        return out


def auto_tile(m: int, n: int, g: int) -> int:
    """Default tile until a machine profile exists: a power of two near M/(4G), within
    [256, 4096] and at most max(M, N) (the source found 2048 best for N = 32768 on 4 GPUs)."""
    target = max(1, m // (4 * max(g, 1)))
    t = 2 ** round(math.log2(target)) if target > 1 else 1
    return int(max(min(t, 4096), min(256, max(m, n))))


def band_rows(m: int, tile: int, g: int, shares=None):
    """The A row bands: (bands of each worker (lists of band indices), [(r0, r1)] per band).

    Without ``shares`` (the source's split) band i is rows [i T, (i+1) T) and goes to
    worker i mod G.  With ``shares`` (one weight >= 0 per worker) worker w gets
    R_w ~ M w / sum(shares) rows (the remainders by largest fraction), in multiples of
    128 where M >= 512 G, else of 8 where M allows (a band height off the GEMM's block
    size costs a whole extra block row: with a granule of 8 balanced rows ran at 0.84-0.93
    of the equal split on 4 H200), cut into about R_w / T near-equal bands; the bands are laid out
    round by round (round r: worker 0's r-th band, worker 1's, ...), so every worker's
    bands are dealt as in the source and only their heights differ."""
    if shares is None:
        band = [(i * tile, min(m, (i + 1) * tile)) for i in range(math.ceil(m / tile))]
        return [list(range(w, len(band), g)) for w in range(g)], band
    try:
        w = [float(x) for x in shares]
    except (TypeError, ValueError):
        raise ValueError(f"shares must be numbers, one per worker, got shares={shares!r}") from None
    if len(w) != g or not all(math.isfinite(x) and x >= 0 for x in w) or sum(w) <= 0:
        raise ValueError(f"shares must be {g} finite weights >= 0 (one per worker) with a "
                         f"positive sum, got shares={list(shares)!r}")
    # row granule: whole GEMM blocks (128 rows) where M allows it, else 8 or 1
    q = 128 if m >= 128 * 4 * g else (8 if m >= 8 * g else 1)
    units = m // q
    exact = [units * x / sum(w) for x in w]
    r_units = [int(e) for e in exact]
    for i in sorted(range(g), key=lambda i: exact[i] - r_units[i], reverse=True)[:units - sum(r_units)]:
        r_units[i] += 1
    R = [u * q for u in r_units]
    R[max(range(g), key=lambda i: R[i])] += m - units * q   # rows left over by the granule
    heights = []
    for r in R:
        nbw = max(1, round(r / tile)) if r else 0
        base, extra = divmod(r // q, nbw) if nbw else (0, 0)
        hs = [(base + (1 if b < extra else 0)) * q for b in range(nbw)]
        if hs:
            hs[-1] += r - sum(hs)
        heights.append([h for h in hs if h > 0])
    bands_of, band, r0 = [[] for _ in range(g)], [], 0
    for rnd in range(max(len(h) for h in heights)):
        for wi in range(g):
            if rnd < len(heights[wi]):
                bands_of[wi].append(len(band))
                band.append((r0, r0 + heights[wi][rnd]))
                r0 += heights[wi][rnd]
    return bands_of, band


def plan_gemm(m: int, k: int, n: int, *, workers, a_dev: int, b_dev: int, c_dev: int,
              tile: int, beta_zero: bool, method: str = "native",
              interleave: str = "tile", shares=None, plane_copies: str = "all",
              row_tile: int | None = None, batch_planes: bool = True) -> Schedule:
    """Build the schedule (see the module docstring).  ``workers``: device ids computing;
    ``method``: "native" (one GEMM per tile, any dtype) or "3m" (complex operands).
    ``interleave``: the issue order across workers -- "tile" (every worker's tile j,
    then tile j + 1: a source sends band B_j to all workers before B_(j+1)) or "band"
    (each worker's whole band in turn).  Streams and dependencies are the same.
    ``shares``: None (the source's split: bands of ``tile`` rows dealt round-robin) or
    one non-negative weight per worker: worker w then gets about M w / sum(shares) rows
    (:func:`band_rows`), so a GPU that also splits and sends the operands, or starts
    late, can be given less (:mod:`mgemm.balance` derives shares from a trace).
    ``plane_copies`` (3m): "all" (default) sends every band as one copy per real
    plane (Re, Im, Re + Im), so a tile's first real GEMM waits for its first plane
    instead of the whole band; "first" does so only for each worker's first A band and
    the B bands of its first two tiles (the start), "none" never (one copy per band;
    measured on 4 H200, N = 32768, tile 4096: all 261.1, first 257.3 TFLOP/s).
    ``row_tile``: the A band height when it should differ from the B band width ``tile``
    (taller A bands: each worker receives every B band fewer times).
    ``batch_planes`` (3m): a tile's three real GEMMs are one op (``batch=3``: one
    strided-batched call on a GPU; measured on one H200, K = 32768, tiles 2048 and 4096:
    0.5-0.7 % faster than three calls), except each worker's first two tiles, whose
    GEMMs start plane by plane as the planes arrive."""
    if min(m, k, n) < 1:
        raise ValueError(f"matrix sizes must be >= 1, got m={m}, k={k}, n={n}")
    if not (isinstance(tile, int) and tile >= 1):
        raise ValueError(f"tile must be an integer >= 1, got tile={tile!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got method={method!r}")
    if interleave not in ("tile", "band"):
        raise ValueError(f"interleave must be 'tile' or 'band', got interleave={interleave!r}")
    if not isinstance(batch_planes, bool):
        raise ValueError(f"batch_planes must be True or False, got batch_planes={batch_planes!r}")
    if plane_copies not in ("first", "all", "none"):
        raise ValueError(f"plane_copies must be 'first', 'all' or 'none', got "
                         f"plane_copies={plane_copies!r}")
    workers = list(workers)
    if not workers or len(set(workers)) != len(workers):
        raise ValueError(f"workers must be distinct device ids, got workers={workers}")
    T = tile
    g3 = method == "3m"
    P = 3 if g3 else 1          # real planes per band (3m: Re, Im, Re + Im)
    nb = math.ceil(n / T)
    if row_tile is not None and not (isinstance(row_tile, int) and row_tile >= 1):
        raise ValueError(f"row_tile must be an integer >= 1, got row_tile={row_tile!r}")
    bands_of, band = band_rows(m, row_tile or T, len(workers), shares)
    rows = band.__getitem__
    H = max(r1 - r0 for r0, r1 in band)   # the tallest A band (= T without shares)
    cols = lambda j: (j * T, min(n, (j + 1) * T))  # noqa: E731
    ops: list[Op] = []
    buffers = {("A", a_dev): (m, k), ("B", b_dev): (k, n), ("C", c_dev): (m, n)}
    # the operands the bands are cut from: A, B themselves, or their real stacks (3m)
    src_a, src_b = ("A3", "B3") if g3 else ("A", "B")
    if g3:
        buffers[("A3", a_dev)] = (m, 3 * k)
        # B3 band-major: band j's stack [Re; Im; Re + Im] is rows [3kj, 3k(j+1)) of a
        # (nb 3k) x T buffer, so sending it is one contiguous copy (a 2-D copy of T-wide
        # rows out of an N-wide B3 ran at ~160 GB/s on H200 NVLink, measured at tile 4096)
        buffers[("B3", b_dev)] = (nb * 3 * k, T)

    def add(kind, dev, stream, reads, writes, deps=(), beta=0.0, label="", after=(), **kw):
        op = Op(len(ops), kind, dev, stream, list(reads), list(writes),
                sorted({d for d in deps if d is not None}), beta, label,
                after=sorted({d for d in after if d is not None}), **kw)
        ops.append(op)
        return op.id

    # Per-worker state, advanced in lock-step so the issue order interleaves workers
    # (each worker's next copies are issued right after its current GEMM, Alg. 2).
    class W:
        pass

    ws = []
    for w in workers:
        s = W()
        s.dev, s.bands = w, bands_of[workers.index(w)]
        s.last_read_A = [None, None]    # last gemm reading bufA slot
        s.last_read_B = [None, None]
        s.last_send_C = [None, None]    # last op reading bufC slot (the send)
        s.b_count = 0
        if w != a_dev:
            buffers[("bufA", w)] = (2 * H, P * k)
        if w != b_dev:
            buffers[("bufB", w)] = (2 * P * k, T)
        if g3:
            buffers[("bufT", w)] = (H, 3 * T)
        if w != c_dev:
            buffers[("bufC", w)] = (2 * H, n)
            if not beta_zero:
                buffers[(f"recvC{w}", c_dev)] = (2 * H, n)
        ws.append(s)
    last_reduce = {}  # (w, slot) -> axpby op reading recvC slot

    # 3m: the source devices split their operands band by band on a "split" stream, each
    # split issued when its band is first needed.  Splits run at full memory bandwidth
    # and slow the peer copies leaving the same GPU, so they are paced: B_j's split waits
    # for the first use of B_(j-2), a worker's next A band's split for the first use of
    # its previous band (the start then sends B_0, B_1 without competing splits).  At the
    # start the sources split first and compute after (below): a split issued next to a
    # running GEMM gets few SMs (measured on 4 H200, tile 4096: the last worker started
    # 39 ms late).
    split_a, split_b = {}, {}
    first_use_a, first_use_b = {}, {}   # band -> the first op reading it (copy or gemm)

    def need_a(i, after=None):
        if g3 and i not in split_a:
            r0, r1 = rows(i)
            split_a[i] = add("split", a_dev, "split", [(Region("A", a_dev, r0, r1, 0, k), None)],
                             [Region("A3", a_dev, r0, r1, 0, 3 * k)], after=[after], axis=1,
                             label=f"split A{i}")
        return split_a.get(i)

    def need_b(j):
        if g3 and j not in split_b:
            c0, c1 = cols(j)
            split_b[j] = add("split", b_dev, "split", [(Region("B", b_dev, 0, k, c0, c1), None)],
                             [Region("B3", b_dev, j * 3 * k, (j + 1) * 3 * k, 0, c1 - c0)],
                             after=[first_use_b.get(j - 2)], axis=0, label=f"split B{j}")
        return split_b.get(j)

    def copy_band(s, src, dst, sid, deps, label, planes, axis):
        """One copy of a band, or (3m, ``planes``) one 2-D copy per real plane, so the
        first real GEMM can start when its plane has arrived.  Returns the op finishing
        each plane (the same op P times for one copy)."""
        if not planes:
            cid = add("copy", s.dev, "copy_in", [(src, sid)], [dst], deps=deps, label=label)
            return (cid,) * P
        return tuple(add("copy", s.dev, "copy_in", [(plane(src, p, axis), sid)],
                         [plane(dst, p, axis)], deps=deps, label=f"{label} plane {p + 1}")
                     for p in range(P))

    def a_region(s, li, i):
        r0, r1 = rows(i)
        sid = need_a(i, first_use_a.get(s.bands[li - 1]) if li else None)
        src = Region(src_a, a_dev, r0, r1, 0, P * k)
        if s.dev == a_dev:
            return src, (sid,) * P
        slot = li % 2
        dst = Region("bufA", s.dev, slot * H, slot * H + (r1 - r0), 0, P * k)
        ids = copy_band(s, src, dst, sid, [s.last_read_A[slot], sid], f"A{i}->w{s.dev}",
                        g3 and plane_copies != "none" and (li == 0 or plane_copies == "all"), 1)
        first_use_a.setdefault(i, ids[0])
        return dst, ids

    def b_region(s, j):
        c0, c1 = cols(j)
        sid = need_b(j)
        src = (Region(src_b, b_dev, j * P * k, (j + 1) * P * k, 0, c1 - c0) if g3
               else Region(src_b, b_dev, 0, k, c0, c1))
        if s.dev == b_dev:
            return src, (sid,) * P, None
        slot = s.b_count % 2
        s.b_count += 1
        dst = Region("bufB", s.dev, slot * P * k, (slot + 1) * P * k, 0, c1 - c0)
        ids = copy_band(s, src, dst, sid, [s.last_read_B[slot], sid], f"B{j}->w{s.dev}",
                        g3 and plane_copies != "none" and ((s.li == 0 and j < 2)
                                                           or plane_copies == "all"), 0)
        first_use_b.setdefault(j, ids[0])
        return dst, ids, slot

    def plane(R, p, axis):
        """Plane p (Re, Im, Re + Im) of a band region of a real stack."""
        if axis == 1:
            return Region(R.buf, R.dev, R.r0, R.r1, R.c0 + p * k, R.c0 + (p + 1) * k)
        return Region(R.buf, R.dev, R.r0 + p * k, R.r0 + (p + 1) * k, R.c0, R.c1)

    def start_band(s, li):
        s.i = s.bands[li]
        s.li = li
        s.aR, s.a_ids = a_region(s, li, s.i)
        s.cslot = li % 2
        s.tile_ids = []   # the op finishing each tile (gemm, or combine for 3m)
        s.last_gemm = None

    def do_tile(s, j):
        i, (r0, r1), (c0, c1), cslot = s.i, rows(s.i), cols(j), s.cslot
        aR, a_ids = s.aR, s.a_ids
        bR, b_ids, b_slot = b_region(s, j)
        if s.dev == c_dev:
            out = Region("C", c_dev, r0, r1, c0, c1)
            beta = 0.0 if beta_zero else "beta"
            send_dep = None
        else:
            out = Region("bufC", s.dev, cslot * H, cslot * H + (r1 - r0), c0, c1)
            beta = 0.0
            send_dep = s.last_send_C[cslot]
        c_read = [(out, None)] if (s.dev == c_dev and not beta_zero) else []
        if not g3:
            gid = add("gemm", s.dev, "compute", [(aR, a_ids[0]), (bR, b_ids[0])] + c_read,
                      [out], deps=[a_ids[0], b_ids[0], send_dep], beta=beta, label=f"C{i},{j}")
            s.last_gemm = gid
            s.tile_ids.append(gid)
        else:
            tRs = [Region("bufT", s.dev, 0, r1 - r0, p * T, p * T + (c1 - c0)) for p in range(3)]
            pairs = [((plane(aR, p, 1), a_ids[p]), (plane(bR, p, 0), b_ids[p])) for p in range(3)]
            if batch_planes and not (s.li == 0 and j < 2):   # one op over the three planes
                gid = add("gemm", s.dev, "compute", [x for pr in pairs for x in pr], tRs,
                          deps=list(a_ids) + list(b_ids), alpha=1.0, label=f"T1-3 C{i},{j}",
                          batch=3)
                gids = [gid] * 3
            else:                                             # plane by plane
                # the B source starts computing only once B_1 is split too (a split next
                # to a running GEMM gets few SMs and holds up B_1's sends)
                pace = [need_b(1)] if (s.dev == b_dev and s.li == 0 and j == 0
                                       and nb > 1) else []
                gids = [add("gemm", s.dev, "compute", list(pairs[p]), [tRs[p]],
                            deps=[a_ids[p], b_ids[p]], alpha=1.0, label=f"T{p + 1} C{i},{j}",
                            after=pace if p == 0 else []) for p in range(3)]
            first_use_a.setdefault(i, gids[0])
            first_use_b.setdefault(j, gids[0])
            s.last_gemm = gids[-1]
            cid = add("combine", s.dev, "compute", list(zip(tRs, gids)) + c_read, [out],
                      deps=[s.last_gemm, send_dep], beta=beta, label=f"C{i},{j}")
            s.tile_ids.append(cid)
        if b_slot is not None:
            s.last_read_B[b_slot] = s.last_gemm

    def finish_band(s, li):
        i, (r0, r1), cslot, tile_ids = s.i, rows(s.i), s.cslot, s.tile_ids
        if s.dev != a_dev:
            s.last_read_A[li % 2] = s.last_gemm
        if s.dev == c_dev:
            return
        # the band's tiles finish in order on one stream: waiting for the last is enough
        band = Region("bufC", s.dev, cslot * H, cslot * H + (r1 - r0), 0, n)
        band_reads = [(Region(band.buf, band.dev, band.r0, band.r1, *cols(j)), t)
                      for j, t in zip(range(nb), tile_ids)]
        if beta_zero:
            sid = add("copy", s.dev, "copy_out", band_reads,
                      [Region("C", c_dev, r0, r1, 0, n)], deps=tile_ids[-1:], label=f"C{i}->C")
            s.last_send_C[cslot] = sid
        else:
            recv = Region(f"recvC{s.dev}", c_dev, cslot * H, cslot * H + (r1 - r0), 0, n)
            sid = add("copy", s.dev, "copy_out", band_reads, [recv],
                      deps=[tile_ids[-1], last_reduce.get((s.dev, cslot))],
                      label=f"C{i}->recv")
            s.last_send_C[cslot] = sid
            cR = Region("C", c_dev, r0, r1, 0, n)
            rid = add("axpby", c_dev, f"reduce{s.dev}", [(recv, sid), (cR, None)], [cR],
                      deps=[sid], beta="beta", label=f"C{i} = beta C{i} + band")
            last_reduce[(s.dev, cslot)] = rid

    if g3:
        # the first round's A splits: the A source's own band last, so (stream order on
        # its split stream) it starts computing only after the bands it sends are split
        for s in sorted(ws, key=lambda s: s.dev == a_dev):
            if s.bands:
                need_a(s.bands[0])
    steps = max(len(s.bands) for s in ws)
    for li in range(steps):
        active = [s for s in ws if li < len(s.bands)]
        if interleave == "band":   # worker by worker: a whole band each
            for s in active:
                start_band(s, li)
                for j in range(nb):
                    do_tile(s, j)
                finish_band(s, li)
        else:                      # tile by tile across the workers
            for s in active:
                start_band(s, li)
            for j in range(nb):
                for s in active:
                    do_tile(s, j)
            for s in active:
                finish_band(s, li)
    real = frozenset({"A3", "B3", "bufA", "bufB", "bufT"}) if g3 else frozenset()
    return Schedule(m, k, n, T, workers, a_dev, b_dev, c_dev, beta_zero, ops, buffers,
                    method, real, band, bands_of, None if shares is None else list(shares))
