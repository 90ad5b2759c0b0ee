"""A batched time step as one CUDA graph (CuPy stream capture), for the block Chebyshev
series of :class:`tdse.numerics.stepper.BatchStepper` on a GPU.

Launched from Python, a step of atom_hhg is some 70 kernels of ~30-50 us of host time each
(3.5 ms a step on an H200, benchmarks/archive/scan_profile.py); here they are captured once
into a graph, replayed by one launch (a run of steps, :data:`MULTI_STEPS`).  What changes
from step to step the kernels read from a device row, fetched by the step's graph from a
segment of the steps' rows uploaded at once (a device counter says which is the step's).  The row
holds, per exponential e, alpha_e = 2 / r_e, the shift c_e, k_e = alpha_e s_e (the
Chebyshev scaling of :func:`tdse.numerics.chebyshev.expm_apply`) and the scheme's time
weights; per time point and member the field E_b(t) and the centres X_bc(t) (a_b and Z_bc
uploaded once); per exponential the coefficients eps_k (-i)^k J_k(R_e) and the phase.

The number of terms K_e of each exponential (:func:`tdse.numerics.chebyshev.terms`) is
part of the graph's shape: one graph is captured per pattern (K_1, K_2, ...) met (a run
meets a few).  The host plans the scalars of up to CHUNK steps at a time (:class:`Planner`,
element by element the per-step computation: tests/test_run_path.py).  Every number is the one the
launched path computes, in the same order except the kinetic product's summation and a
block's DVR series in the folded basis (:data:`FOLD_HALVES`; equal to 1e-13, tests/test_gpu.py).
The kinetic product is a cuBLAS DGEMM (:mod:`tdse.backends.cupy.blas`) for the DVR, one
stencil kernel for the 3- and 5-point T; for one member with the DVR a whole term is one
kernel (:data:`tdse.backends.cupy.chain.GEMV_TERM`), and one member's whole exponential is
one kernel where it fits: the DVR's cooperative chain, a stencil's overlapping tiles
(``tdse_cheb_tile``).  Between save points psi stays in the graph's buffer
(:meth:`GraphStep.advance`).
"""
from __future__ import annotations

import collections

import numpy as np

from ..backends.cupy.blas import dgemm_fn, dgemm_halves_into, dgemm_into  # noqa: F401  (re-exported)
from ..backends.cupy.capture import capture, copy_in, copy_out  # noqa: F401  (re-exported)
from .graph_fft import FFTKinetic, dvr_by_fft
from .graph_plan import CHUNK, HEAD, TAPS, Planner, plan_ahead, planning_thread, segment

#: the ring of the dense and estimating graphs' per-step uploads (:class:`mgemm.arrays.PinnedUpload`)
RUN_AHEAD = 64
#: a graph step uploads the rows of the steps between two save points (a chunk's at most)
#: at once, into a segment its graphs read (:meth:`GraphStep.advance`): a ring of this many
#: pinned segments.  The host's lead is then bounded by CUDA's queue (~1024 launches), where
#: a row uploaded a step was ~170 steps (``lead_depth_h100x1_20261126T1620_3point.txt``)
SEGMENT_RING = 16
#: ... fewer (at least 4) where 16 segments would pin more host memory than this (a choice:
#: the per-step ring's cap before; a scan's batch of 1000 members makes ~3.6 MB segments)
SEGMENT_RING_BYTES = 32 << 20

__all__ = ["available", "GraphStep", "CHUNK", "capture", "copy_in", "copy_out", "dgemm_fn"]

#: chunks planned ahead of the one stepping, and the fewest steps of one (:meth:`GraphStep._plan`; a choice)
PLAN_DEPTH, PLAN_FIRST = 3, 16
#: steps of one pattern in one graph at most (GraphStep.advance: m such steps launched as
#: graphs of 2^k steps, each step fetching its own row: the same bits); a launch a step held
#: the loop's thread ~5-8 us of a 20 us step at N = 8192 (multi_step_graph_h200x1_20261130T0625.txt)
MULTI_STEPS = 16

#: the one-kernel exponential (:data:`tdse.backends.cupy.chain.CHAIN`): warps a block, and
#: the largest shared memory for x (16 N bytes: N <= 3072)
CHAIN_WARPS = 8
CHAIN_SMEM = 48 * 1024
#: the paths' own switches, each measured against the path without it and kept on (tests
#: turn one off to check the paths agree): one fused GEMV kernel a Chebyshev term (one
#: member, the DVR's dense T), a whole exponential as one cooperative kernel, T's rows in
#: registers (the DVR's four-step FFT: :data:`tdse.numerics.graph_fft.FOUR_STEP`)
FUSED_GEMV = CHEB_CHAIN = CHAIN_REG_ROWS = True
#: a block's DVR series in the folded basis (N even, the length gauge): T as its two
#: centrosymmetric halves by one batched DGEMM, a pair of rows a thread in the passes (a
#: term 23.5 us against 33.8 at N = 500, B = 1000 on one H200, ``folded_gpu_term_h200x1_20261203T1455.txt``)
FOLD_HALVES = True
#: T's row in registers (tdse_cheb_chain_reg): up to 32 CHAIN_REG columns, one row a warp
CHAIN_REG = 32
#: a stencil's exponential of one member as one kernel of overlapping tiles (tdse_cheb_tile;
#: tests turn it off to check it against the terms' nodes): at least 32 TILE_ROWS rows a
#: block, a block an SM where N allows; an exponential whose halo (1 or 2 rows a term)
#: would need more than TILE_SMEM of shared memory runs as the terms' nodes
CHEB_TILE = True
TILE_ROWS = 32
TILE_SMEM = 48 * 1024


def tile_smem(tile, halo):
    """Shared bytes of tdse_cheb_tile: three terms and d on the tile's rows and halo, the
    running sum on its rows."""
    return 16 * (3 * (tile + 2 * halo) + (tile + 2 * halo + 1) // 2 + tile)


def folded(cp, grid, B, velocity) -> bool:
    """Whether a block step of ``B`` members on ``grid`` runs its DVR series in the folded
    basis (:data:`FOLD_HALVES`): T the dense GEMM (not by FFT, :func:`dvr_by_fft`), N even,
    B > 1, the length gauge."""
    return (FOLD_HALVES and grid.stencil == "dvr" and grid.n % 2 == 0 and B > 1 and not velocity
            and not dvr_by_fft(cp, grid.n, B, grid))


def available(stepper) -> bool:
    """Whether ``stepper`` (a BatchStepper) can step by graphs: CuPy, the kinetic product a
    GEMM (DVR up to DVR_GEMM_MAX_N), two FFTs (the DVR beyond it, one member) or a stencil,
    and the option ``run.graphs`` on."""
    if not stepper.config.run.graphs or stepper.xp is np:
        return False
    from ..model.hamiltonian import DVR_GEMM_MAX_N
    g = stepper.config.grid
    if g.stencil == "dvr" and g.n > DVR_GEMM_MAX_N and (stepper.potential.B != 1 or stepper.potential.velocity):
        return False        # beyond the GEMM's N one member in the length gauge only (:class:`~tdse.numerics.graph_fft.FFTKinetic`)
    try:
        dgemm_fn(stepper.xp)
    except (OSError, AttributeError):
        return False
    return True


class GraphStep:
    """Steps an N x B block as :meth:`BatchStepper.step` does, one graph launch a step."""

    def __init__(self, stepper, bounds=None):
        import cupy as cp
        from ..model import hamiltonian
        self.cp, self.st = cp, stepper
        self.planner = Planner(stepper, bounds)
        self.exponentials = self.cheb_terms = 0
        self.nodes_per_step = None
        self._chunk = None      # the planned steps (Planner.chunk)
        self._ahead = collections.deque()   # (j0, m, future): the next chunks, planned in a thread (_plan)
        self._end, self._size = None, 0   # the step after the last chunk planned, and its length
        cfg, pot = stepper.config, stepper.potential
        g = cfg.grid
        self.n, self.B, self.C = g.n, pot.B, pot.slots
        # the scheme's exponentials (scale, time weights) and its number of times: the planner's
        self.scheme, self.rows, self.nt = self.planner.scheme, self.planner.rows, self.planner.nt
        from ..backends.cupy.chain import graph_kernels     # (V's row from its device definition)
        self.k = graph_kernels(cp, pot.device, CHAIN_REG)
        n, B = self.n, self.B
        self.fft = None
        # the velocity gauge's a_b p (p = -i D): D X by the stencil's band kernel or the
        # DVR's dense D (a DGEMM), added in the recurrence's pass (first_v / recur_v)
        self.velocity = self.planner.velocity
        if g.stencil == "dvr" and not self.velocity and dvr_by_fft(cp, n, B, g):
            self.T = self.bands = None
            self.fft = FFTKinetic(cp, g, B)
        elif g.stencil == "dvr":
            self.T = cp.ascontiguousarray(hamiltonian.kinetic_dense(g, cp))
            self.bands = None
        else:
            self.T, self.bands = None, hamiltonian.kinetic_bands(g.stencil, g.dx)
        self.x = pot.x                                           # (N, 1) on the device
        self.Q = pot.constants()
        # the parameters (BatchPotential.pack): a header per exponential, then the step's
        # times' field and centres shared by them, uploaded a step at a time; and the
        # coefficients (and phases) of every exponential of the step
        self.seg = 3 + self.nt
        self.base = len(self.rows) * self.seg
        # a row a step: parameters, then coefficients, read by the kernels from self.row;
        # the rows of the steps between two save points are uploaded at once (a segment,
        # self.up) and a step's row fetched from it by the step's graph (:meth:`advance`)
        self.vbase = self.base + self.nt * B * (1 + self.C)     # velocity: alpha a, alpha q
        self.row_floats = self.vbase + (2 * len(self.rows) * B if self.velocity else 0) + 2 + 2 * 512
        from mgemm.arrays import PinnedUpload
        seg_floats = HEAD + CHUNK * self.row_floats
        self.up = PinnedUpload(cp, ring=max(4, min(SEGMENT_RING, SEGMENT_RING_BYTES // (8 * seg_floats))))
        # its segment sized by the steps' stride (their terms), not the row's most (1024
        # coefficients: 2.25 MB a pinned slot at CHUNK = 256; chunk_adapt_h200x1_20261130T1310.txt)
        self._seg_ptr, self._hseg, self.seg_stride = None, None, 0
        self.row = cp.zeros(self.row_floats)
        self.slot = cp.full(TAPS, -1, dtype=np.int32)   # the step's tap slots (tdse_row_fetch)
        self.tap_to = []         # the blocks whose rows the taps fill (:meth:`_slot_of`)
        self._warmed = False     # the kernels compiled (:meth:`_graph`)
        self._slot_ids = {}      # id(row) -> (row, its slot or None) (:meth:`_slot_of`)
        self.P = self.A = None
        # (by FFT: the first N rows of 2N, the rest zero for good: the FFT's padded input)
        buf = (self.fft.buffer if self.fft is not None
               else lambda: cp.zeros((n, B), dtype=np.complex128))
        self.Xin, self.Xw, self.Y = buf(), buf(), buf()
        # T X's buffer of the dense and banded products (the FFT returns its own)
        self.kin = buf() if self.fft is None else None
        # the DVR's block series in the folded basis (FOLD_HALVES): K = (2 P, 2 Q) of
        # kinetic_halves, the folded input in F
        self.K2 = self.F = None
        if folded(cp, g, B, self.velocity):
            self.K2 = cp.ascontiguousarray(2.0 * cp.stack(hamiltonian.kinetic_halves(g, cp)))
            self.F = buf()
        self.work = [buf(), buf(), buf()]
        self.d = cp.zeros((n, B))
        # one member with the DVR's dense T: a term is one fused GEMV kernel (else a cuBLAS
        # GEMM or the stencil kernel, then the recurrence's pass; FUSED_GEMV: tests force it off)
        # (velocity gauge: fused only as the whole-exponential kernel, which adds D x)
        fusable = B == 1 and self.T is not None and FUSED_GEMV
        self.fused = fusable and (not self.velocity or (16 * n <= CHAIN_SMEM and CHEB_CHAIN))
        self.D = self.dbands = self.mom = None
        if self.velocity:
            from ..model.momentum import BlockMomentum, momentum_bands
            if self.T is not None:
                self.D = BlockMomentum(g, cp).D
            else:
                self.dbands = momentum_bands(g.stencil, g.dx)
            self.mom = buf()
        self.masks = {s: stepper._mask(s) for s, _ in self.rows} if stepper.W is not None else {}
        # ... and, where x fits in a block's shared memory, a whole exponential is one
        # cooperative kernel (:data:`tdse.backends.cupy.chain.CHAIN`; CHEB_CHAIN: tests force it off)
        self.chain = self.fused and 16 * n <= CHAIN_SMEM and CHEB_CHAIN
        if self.chain:
            sms = cp.cuda.Device().attributes["MultiProcessorCount"]
            self.chain_grid = (min(-(-n // CHAIN_WARPS), sms),)
            # T's rows held in registers where every row has its own warp
            self.chain_kernel = ("tdse_cheb_chain_reg" if n <= 32 * CHAIN_REG
                                 and -(-n // CHAIN_WARPS) <= sms else "tdse_cheb_chain")
            if not CHAIN_REG_ROWS or self.velocity:      # (D's row from L2 beside T's)
                self.chain_kernel = "tdse_cheb_chain"
            self.bar = cp.zeros(2, dtype=np.uint32)
            self.coop = True        # a cooperative launch (all blocks resident, or an error)
        # ... and on a stencil, one kernel of overlapping tiles (chain.tdse_cheb_tile): its
        # rows a block, and the halo's rows a term (1: the 3-point stencil, 2: the 5-point)
        self.tile = None
        if B == 1 and self.bands is not None and CHEB_TILE:
            sms = cp.cuda.Device().attributes["MultiProcessorCount"]
            self.tile = max(TILE_ROWS, TILE_ROWS * -(-n // (TILE_ROWS * sms)))
            self.rad = 1 if self.bands[2] == 0.0 and (self.dbands is None or self.dbands[1] == 0.0) else 2
        self.graphs, self._node_counts = {}, {}

    # ---------------------------------------------------------------- device side
    def _kinetic(self, X):
        if self.fft is not None:
            return self.fft(X)
        if self.K2 is not None:
            dgemm_halves_into(self.cp, self.K2, X, self.kin)
        elif self.T is not None:
            dgemm_into(self.cp, self.T, X, self.kin)
        else:
            d0, d1, d2 = self.bands
            self.k["band"](X, d0, d1, d2, self.n, self.B, self.kin)
        return self.kin

    def _momentum(self, X):
        """D X (p X = -i D X) into its buffer: the DVR's dense D by one DGEMM, a stencil's
        two bands by one kernel."""
        if self.D is not None:
            dgemm_into(self.cp, self.D, X, self.mom)
        else:
            c1, c2 = self.dbands
            self.k["dband"](X, c1, c2, self.n, self.B, self.mom)
        return self.mom

    def _term(self, x, p, z, ik, ia, first):
        """One Chebyshev term of one member by the fused GEMV kernel (:data:`tdse.backends.cupy.chain.GEMV_TERM`)."""
        n = self.n
        self.k["gemv_term"](((32 * n + 255) // 256,), (256,),
                            (self.T, x, self.d, p, self.P, np.int32(ik), self.A, np.int32(ia), z,
                             self.Y, np.int32(n), np.int32(first)))

    def _chain(self, X, mask, h, ia, K, out):
        """One exponential of one member by the cooperative kernel :data:`tdse.backends.cupy.chain.CHAIN`."""
        null = np.uint64(0)
        self.k[self.chain_kernel, self.coop](self.chain_grid, (32 * CHAIN_WARPS,),
                        (self.T, X, null if mask is None else mask, self.x, self.P, self.Q,
                         np.int32(h), np.int32(self.base), np.int32(self.nt), np.int32(self.C),
                         np.int32(int(self.st.potential.has_field)), self.A, np.int32(ia),
                         np.int32(K), *self.work, self.Y, self.d, out, np.int32(self.n), self.bar,
                         null if self.D is None else self.D, np.int32(self.vbase + 2 * (h // self.seg))),
                        shared_mem=16 * self.n)

    def _tiled(self, K):
        """Whether an exponential of K terms runs as tdse_cheb_tile (its shared memory fits)."""
        return self.tile is not None and tile_smem(self.tile, self.rad * max(K, 1)) <= TILE_SMEM

    def _tile_exp(self, X, mask, h, ia, K, iv, out, taps=False):
        """One exponential of one member on a stencil by tdse_cheb_tile; ``taps``: its output
        also into the tap slots' rows (:meth:`_step_body`)."""
        halo = self.rad * max(K, 1)
        ext = self.tile + 2 * halo
        c1, c2 = self.dbands if self.dbands is not None else (0.0, 0.0)
        d0, d1, d2 = self.bands
        f = np.float64
        self.k["tdse_cheb_tile"]((-(-self.n // self.tile),), (min(1024, 32 * -(-ext // 32)),),
                                 (X, np.uint64(0) if mask is None else mask, self.x, self.P, self.Q,
                                  np.int32(h), np.int32(self.base), np.int32(self.nt), np.int32(self.C),
                                  np.int32(int(self.st.potential.has_field)), self.A, np.int32(ia),
                                  np.int32(K), f(d0), f(d1), f(d2), f(c1), f(c2),
                                  np.int32(int(self.velocity)), np.int32(iv), out, np.int32(self.n),
                                  np.int32(self.tile), np.int32(self.rad),
                                  *((self.slot, self.tap_to[0], self.tap_to[-1]) if taps
                                    else (np.uint64(0),) * 3)),
                                 shared_mem=tile_smem(self.tile, halo))

    def _body(self, pattern, taps=False):
        """The step's kernels for a pattern of term counts (eagerly or under capture): the buffer
        that holds the result (Xin, or Xw after an odd count of whole-exponential kernels).
        ``taps``: where the last exponential is tdse_cheb_tile, it writes the step's tap rows
        (:attr:`tapped` then True)."""
        k = self.k
        X = self.Xin
        ia = 0
        self.tapped = False
        for e, (s, _row) in enumerate(self.rows):
            K = pattern[e]
            h = e * self.seg
            iv = self.vbase + 2 * e * self.B      # velocity: alpha a_b at iv, alpha q_b after
            if self.chain or self._tiled(K):     # an exponential a kernel, Xin and Xw in turn
                out = self.Xw if X is self.Xin else self.Xin
                if self.chain:
                    self._chain(X, self.masks.get(s), h, ia, K, out)
                else:
                    last = taps and bool(self.tap_to) and e == len(self.rows) - 1
                    self._tile_exp(X, self.masks.get(s), h, ia, K, iv, out, last)
                    self.tapped = last
                X = out
                ia += K + 2
                continue
            k["diag"](self.x, self.P, self.Q, h, self.base, self.nt, self.C, self.B,
                      int(self.st.potential.has_field), self.d)
            if self.velocity:
                k["vdiag"](self.P, iv + self.B, self.B, self.d)
            mask = self.masks.get(s)
            pair = self.K2 is not None
            half = self.n // 2 * self.B
            if pair:
                if mask is not None:
                    k["fold_mask"](X, mask, self.n, self.B, self.F, size=half)
                else:
                    k["fold"](X, self.n, self.B, self.F, size=half)
                X = self.F
            elif mask is not None:
                k["mask"](X, mask, self.Xw)
                X = self.Xw
            W = self.work
            cur = W[0]
            if self.fused:
                self._term(X, X, cur, h + 2, ia, 1)
            elif self.velocity:
                k["first_v"](self._kinetic(X), self._momentum(X), self.d, X, self.P, h + 2,
                             self.A, ia, iv, self.B, cur, self.Y)
            elif pair:
                k["first_pair"](self._kinetic(X), self.d, X, self.P, h + 2, self.A, ia, self.n,
                                self.B, cur, self.Y, size=half)
            else:
                k["first"](self._kinetic(X), self.d, X, self.P, h + 2, self.A, ia, cur, self.Y)
            prev = X
            for kk in range(2, K + 1):       # three buffers in rotation (X is not one)
                nxt = next(b for b in W if b is not cur and b is not prev)
                if self.fused:
                    self._term(cur, prev, nxt, h + 2, ia + kk, 0)
                elif self.velocity:
                    k["recur_v"](self._kinetic(cur), self._momentum(cur), self.d, cur, prev, self.P,
                                 h + 2, self.A, ia + kk, iv, self.B, nxt, self.Y)
                elif pair:
                    k["recur_pair"](self._kinetic(cur), self.d, cur, prev, self.P, h + 2, self.A,
                                    ia + kk, self.n, self.B, nxt, self.Y, size=half)
                else:
                    k["recur"](self._kinetic(cur), self.d, cur, prev, self.P, h + 2, self.A,
                               ia + kk, nxt, self.Y)
                prev, cur = cur, nxt
            out = self.Xin if e == len(self.rows) - 1 else self.Xw
            if pair:
                k["final_unfold_mask" if mask is not None else "final_unfold"](
                    self.Y, self.A, ia + K + 1, *(() if mask is None else (mask,)), self.n,
                    self.B, out, size=half)
            elif mask is not None:
                k["final_mask"](self.Y, self.A, ia + K + 1, mask, out)
            else:
                k["final"](self.Y, self.A, ia + K + 1, out)
            X = out
            ia += K + 2
        return X

    def _graph(self, pattern, steps=1):
        """The graph of ``steps`` steps of ``pattern``, captured at its first use (every
        kernel compiled outside any capture first: :meth:`_warm`)."""
        key = (pattern, steps)
        if key not in self.graphs:
            cp = self.cp
            if not self._warmed:
                self._warm(pattern)
                self._warmed = True
            body = lambda: [self._step_body(pattern) for _ in range(steps)]  # noqa: E731
            try:
                self.graphs[key] = capture(cp, body)
            except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError):
                if not (self.chain and self.coop):
                    raise
                # this CUDA cannot capture a cooperative launch: a plain one (its grid is at
                # most one block an SM, so every block is resident once earlier work ends)
                self.coop = False
                self.graphs[key] = capture(cp, body)
        return self.graphs[key]

    def _step_body(self, pattern):
        """A step as its graph has it: its row fetched from the segment, the body, and the
        tap (:data:`tdse.backends.cupy.chain.ROWS`), which also copies a result left in Xw --
        or, where the step's last exponential is tdse_cheb_tile, the tap written by that
        kernel (the rows' node had cost 1.53 us a step against the bare step's 1.0 us copy
        at N = 8192 on one H200, ``device_timeline_h200x1_20261203T1815.txt``)."""
        self.k["row_fetch"]((1,), (256,), (self.up.dev, self.row, self.slot, np.int32(CHUNK)))
        X = self._body(pattern, taps=True)
        m, to = self.n * self.B, self.tap_to
        if to and not self.tapped:
            into = np.uint64(0) if X is self.Xin else self.Xin
            self.k["row_tap"]((min(-(-m // 256), 1024),), (256,),
                              (X, into, to[0], to[-1], self.slot, np.int64(m)))
        elif X is not self.Xin:              # (where the next step reads it)
            self.Xin.data.copy_from_device_async(X.data, X.nbytes)

    def _plan(self, j, want):
        """:meth:`Planner.chunk` at ``j`` (planned ahead where it is the one asked for, else
        now; a step's scalars do not depend on its chunk): twice the last chunk's steps
        where it goes on from it, up to :data:`CHUNK`, else the ``want`` steps asked for
        rounded up to a power of two from :data:`PLAN_FIRST`; only a chunk that goes on has
        chunks planned ahead in a thread (one while they grow, :data:`PLAN_DEPTH` at CHUNK).
        CHUNK steps and PLAN_DEPTH more for each adaptive step size had cost the laser's run
        ~10 ms of NumPy a size, mostly never taken (``planner_adapt_cpu2_20261130T1430.txt``)."""
        ahead, on = self._ahead, self._end == j
        if ahead and ahead[0][0] == j:
            _, m, f = ahead.popleft()
            ch = f.result()            # (None too: the planner's answer for j)
        else:       # not the one asked for: those not begun cancelled, one under way waited for
            for _, _, f in ahead:
                f.cancel() or f.result()
            ahead.clear()
            m = min(CHUNK, 2 * self._size) if on else \
                min(CHUNK, 1 << (max(PLAN_FIRST, int(want)) - 1).bit_length())
            ch = self.planner.chunk(j, m)
        self._end, self._size = j + m, m
        if ch is not None and on and plan_ahead():
            nxt, size = (ahead[-1][0] + ahead[-1][1], ahead[-1][1]) if ahead else (j + m, m)
            while len(ahead) < (PLAN_DEPTH if m == CHUNK else 1):
                size = min(CHUNK, 2 * size)
                ahead.append((nxt, size, planning_thread().submit(self.planner.chunk, nxt, size)))
                nxt += size
        return ch

    def advance(self, X, j0, j1, taps=None):
        """``X`` stepped from step ``j0`` towards ``j1``: (a new array, the step reached).
        psi stays in the graphs' buffer between steps: one copy in and one copy out.  The
        rows of the steps up to ``j1`` (a chunk's at most) go to the device in one upload;
        a run of steps of one pattern is a few launches (:data:`MULTI_STEPS`), each step's
        graph body fetching its row and, where ``taps`` names the step with a row of a block
        it fills (:meth:`_slot_of`), copying psi there (a memcpy after the step's launch for
        any other row, as :func:`tdse.numerics.propagators.tap`).  The step reached is below
        ``j1`` where the planner leaves that step to the launched path (r = 0)."""
        j, here = j0, None       # (here: psi in Xin, as X's shape, for a callable tap)
        while j < j1 and self._ready(j, j1):
            c0, patterns = self._chunk[0], self._chunk[1]
            e = min(j1, c0 + len(patterns))
            slots, late = self._slots(taps, j, e)
            if j == j0:
                copy_in(self.cp, self.Xin, X)
            self._upload(j - c0, e - c0, slots)
            graphs, i, end = self.graphs, j - c0, e - c0
            while i < end:      # the steps of one pattern up to a late tap: m at once
                p, m = patterns[i], 1
                while m < MULTI_STEPS and i + m < end and patterns[i + m] == p \
                        and not (late is not None and c0 + i + m in late):
                    m += 1
                i += m
                while m:        # (as graphs of 2^k steps: a few shapes a pattern)
                    k = 1 << (m.bit_length() - 1)
                    (graphs.get((p, k)) or self._graph(p, k)).launch()
                    m -= k
                for row in (late or {}).get(c0 + i, ()):
                    if callable(row):             # (propagators.tap: given psi where it lives)
                        if here is None:
                            here = self.Xin.reshape(-1)[:X.size].reshape(X.shape)
                        row(here)
                    else:
                        copy_in(self.cp, row, self.Xin)
            self.exponentials += (e - j) * len(self.rows)
            self.cheb_terms += sum(map(sum, patterns[j - c0:e - c0]))
            self.nodes_per_step = self._nodes(patterns[e - c0 - 1])
            j = e
        return (X if j == j0 else copy_out(self.cp, self.Xin, X.shape)), j

    def _ready(self, j, j1):
        """Whether step j is planned (its chunk fetched by :meth:`_plan`, asked up to ``j1``)."""
        ch = self._chunk
        if ch is None or not ch[0] <= j < ch[0] + len(ch[1]):
            ch = self._chunk = self._plan(j, j1 - j)
        return ch is not None

    def _slots(self, taps, j, e):
        """(the tap slots of steps j .. e - 1, (e - j) x TAPS: the row of each block of :attr:`tap_to`
        psi after the step fills, -1 for none; {step: rows} the graphs do not fill, or None): one flat list."""
        flat, late, ids, base = [-1.0] * (TAPS * (e - j)), None, self._slot_ids.get, -TAPS * (j + 1)
        rows_at = (taps or {}).get
        for k in range(j + 1, e + 1):      # (the chunk's steps, not every tap's)
            for row in rows_at(k, ()):
                got = ids(id(row))
                s = got[1] if got is not None and got[0] is row else \
                    None if callable(row) else self._slot_of(row)
                if s is not None and flat[base + TAPS * k + s[0]] < 0:
                    flat[base + TAPS * k + s[0]] = s[1]
                else:
                    (late := late or {}).setdefault(k, []).append(row)
        return np.array(flat, dtype=np.float64).reshape(e - j, TAPS), late

    def _slot_of(self, row):
        """(t, the index of ``row`` in block t of the blocks the graphs' taps fill: the first
        TAPS blocks met, the graphs captured again with each), or None for another array;
        kept by the row's id with the row (a block's rows are the same views every time)."""
        got = self._slot_ids.get(id(row))
        if got is not None and got[0] is row:
            return got[1]
        slot = self._find_slot(row)
        if len(self._slot_ids) > 4096:      # (rows made anew each time: not kept for ever)
            self._slot_ids.clear()
        self._slot_ids[id(row)] = (row, slot)
        return slot

    def _find_slot(self, row):
        base = getattr(row, "base", None)
        m = self.n * self.B
        if base is None or base.ndim != 2 or base.shape[1] != m or base.dtype != np.complex128 \
                or not base.flags.c_contiguous or row.size != m or not row.flags.c_contiguous:
            return None
        t = next((t for t, b in enumerate(self.tap_to) if b is base), None)
        if t is None and len(self.tap_to) < TAPS:
            t = len(self.tap_to)
            self.tap_to.append(base)
            self.graphs.clear()
        off, size = row.data.ptr - base.data.ptr, 16 * m
        return (t, off // size) if t is not None and off % size == 0 and 0 <= off < base.nbytes else None

    def _upload(self, a, b, slots):
        """The rows of the chunk's steps a .. b - 1 and their tap ``slots`` to the device
        segment in one upload: [0 (the counter), the stride, TAPS slots a step, the rows]."""
        _, _, Ps, As, _ = self._chunk
        nP = Ps.shape[1]
        n_p = nP + nP % 2                       # the coefficients 16-byte aligned
        stride = n_p + 2 * As.shape[1]
        if stride > self.row_floats or self.P is None or self.P.size != nP:
            self._rows(max(stride, self.row_floats), nP, n_p)
        if stride > self.seg_stride:            # (a few terms' headroom: K moves with R)
            self.seg_stride = stride + 32
            self._hseg = np.zeros(HEAD + CHUNK * self.seg_stride)
            self.up.put(self._hseg)
        self.up.put(segment(self._hseg, Ps[a:b], As[a:b], n_p, slots))
        if self.up.dev.data.ptr != self._seg_ptr:   # the segment grew: the graphs read the old one
            self._seg_ptr = self.up.dev.data.ptr
            self.graphs.clear()

    def _rows(self, floats, nP, n_p):
        """The step's row on the device of ``floats`` values (P: the first ``nP``, A from
        ``n_p``); the graphs, which read the old one, dropped."""
        if floats != self.row_floats:
            self.row_floats = floats
            self.row = self.cp.zeros(floats)
        self.P = self.row[:nP]
        self.A = self.row[n_p:n_p + 2 * ((floats - n_p) // 2)].view(np.complex128)
        self.graphs.clear()

    def _nodes(self, pattern):
        """The step's kernel nodes: the row's fetch [and the tap, where the last exponential
        is not tdse_cheb_tile, which writes it]; an exponential a node (chain, tile); else per
        exponential the potential, [mask], a fused term or (product, pass) per term, the
        phase [and mask]."""
        fused = not self.chain and self._tiled(pattern[-1])
        return self._exp_nodes(pattern) + 1 + (bool(self.tap_to) and not fused)

    def _exp_nodes(self, pattern):
        if pattern in self._node_counts:
            return self._node_counts[pattern]
        per_term = (1 if self.fused else 2 if self.fft is None
                    else 8 if self.fft.four_step else 4) + (1 if self.velocity else 0)
        n = self._node_counts[pattern] = sum(
            1 if self.chain or self._tiled(K) else per_term * K + 2 + (1 if self.masks or self.K2 is not None else 0)
            + (1 if self.velocity else 0) for K in pattern)
        return n

    def _warm(self, pattern):
        """Run the body once eagerly on a copy of the buffers (kernels compile here, not
        under capture), then restore the input; the row kernels compiled."""
        from cupy_backends.cuda.libs import cublas
        self.k["row_fetch"].compile()
        self.k["row_tap"].compile()
        keep = self.Xin.copy()
        cublas.setStream(self.cp.cuda.device.get_cublas_handle(),
                         self.cp.cuda.get_current_stream().ptr)
        self._body(pattern)
        self.cp.copyto(self.Xin, keep)
