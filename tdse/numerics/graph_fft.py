"""The sinc-DVR's kinetic product by FFT inside a step's CUDA graph (one member): T embedded
in a circulant of size 2N, its transforms by Bailey's four-step FFT or one cuFFT call each
way, with plans and buffers made once (:mod:`tdse.numerics.graphs`)."""
from __future__ import annotations

import numpy as np

__all__ = ["FFTKinetic", "dvr_by_fft", "block_by_fft", "four_step_tables", "FFT_MIN_N", "FOUR_STEP",
           "FOUR_STEP_MIN", "BLOCK_FFT"]

#: the four-step FFT on (measured against one cuFFT call of 2N and kept on; a test turns it
#: off to check the two agree)
FOUR_STEP = True

#: one member's DVR steps by FFT (:class:`FFTKinetic`) from this N (else the dense T: a
#: GEMV kernel a term, or the one-kernel exponential); None: from where T's 8 N^2 bytes
#: exceed 0.8 of the device's L2 cache (then T comes from HBM every term).  Measured on one
#: H100 (50 MiB of L2; bare step, dense / FFT, ms): N = 2048 0.191 / 0.238, 2304 (T 42 MB)
#: 0.536 / 0.292, 3072 1.000 / 0.370, 4096 1.45 / 0.42
#: (``dvr_graph_paths_h100x1_20261126T1840.txt``): the 0.8 puts the switch between 2048
#: and 2304 there.  Beyond DVR_GEMM_MAX_N always.
FFT_MIN_N = None
L2_FRACTION = 0.8


#: a scan's block (B > 1 members) by FFT or by the dense T's GEMM: None -- whichever of the
#: two takes less time on this device, timed once for each (N, B) when its graph is made
#: (:func:`block_by_fft`); True / False: forced (tests)
BLOCK_FFT = None
_BLOCK_CHOICES = {}


def dvr_by_fft(cp, n, B, grid=None):
    """Whether a DVR graph applies T by FFT: one member by :data:`FFT_MIN_N`; a block of B
    members (``grid`` given) by :func:`block_by_fft`."""
    from ..model.hamiltonian import DVR_GEMM_MAX_N
    if B != 1:
        return grid is not None and block_by_fft(cp, grid, B)
    if n > DVR_GEMM_MAX_N:
        return True
    if FFT_MIN_N is not None:
        return n >= FFT_MIN_N
    return 8 * n * n > L2_FRACTION * cp.cuda.Device().attributes["L2CacheSize"]


def block_by_fft(cp, grid, B, repeat=5):
    """Whether T X of an N x B block takes less time by :class:`FFTKinetic` (two batched
    cuFFT transforms of 2N and a product) than by the dense T's GEMM (N^2 2B multiply-adds:
    at N = 500 and B = 1000 a GFLOP a term) on this device: each timed ``repeat`` times on
    a random block, once for each (device, N, dx, B) in a process (:data:`BLOCK_FFT` forces
    it).  Near the crossover two processes (Dask workers, a resumed scan) may choose
    differently: the two paths agree to ~1e-13 at N = 500 and 6e-11 at N = 4000 (members'
    acceleration, ``scan_fft_h200x1_20261129T2334.txt``), not bit for bit."""
    if BLOCK_FFT is not None:
        return BLOCK_FFT
    from ..model.hamiltonian import DVR_GEMM_MAX_N, kinetic_dense
    if grid.n > DVR_GEMM_MAX_N:
        return True
    key = (cp.cuda.Device().id, grid.n, grid.dx, B)
    if key not in _BLOCK_CHOICES:
        n = grid.n
        fft, T = FFTKinetic(cp, grid, B), cp.asarray(kinetic_dense(grid, cp))
        X = fft.buffer()
        X[...] = cp.random.standard_normal((n, B)) + 1j * cp.random.standard_normal((n, B))
        real = cp.ascontiguousarray(X).view(np.float64)
        seconds = []
        for apply in (lambda: fft(X), lambda: T @ real):
            apply()
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(repeat):
                apply()
            stop.record()
            stop.synchronize()
            seconds.append(cp.cuda.get_elapsed_time(start, stop))
        _BLOCK_CHOICES[key] = seconds[0] < seconds[1]
    return _BLOCK_CHOICES[key]


#: the four-step FFT (:func:`four_step_tables`) where 2N = N1 N2 has a factor N1 >= this
#: (else one cuFFT call of 2N; FOUR_STEP: tests force the single call)
FOUR_STEP_MIN = 16


def four_step_tables(n, dx):
    """The four-step FFT (Bailey's, "FFTs in external or hierarchical memory", 1990) of the
    DVR's circulant product of size M = 2N, M = N1 N2 (N1 the largest factor <= sqrt M):
    x[N2 j1 + j2] as the N1 x N2 matrix a[j1, j2], its DFT X[k1 + N1 k2] = sum_j2
    w_N2^(j2 k2) w_M^(j2 k1) sum_j1 a[j1, j2] w_N1^(j1 k1) (w_L = e^(-2 pi i / L)): FFTs down
    the columns, the twiddles w_M^(j2 k1), FFTs along the rows give X in the transposed
    order [k1, k2].  The symbol is multiplied in that order and the inverse runs the same
    steps backwards (conjugate twiddles), so no transpose is ever made.  Returns (N1, N2,
    twiddles (N1, N2), the symbol / M in the order [k1, k2] (N1, N2)), NumPy; the twiddle's
    angle from (k1 j2 mod M), exact integers.  Each pass is N1 or N2 FFTs side by side
    (2-3 us on an H100 at M = 16384), where one cuFFT call of 16384 points takes 25 us
    (its few blocks): a DVR term 16 against 53 us (``fft_parts_h100x1_20261126T1842.txt``)."""
    from ..model.hamiltonian import dvr_symbol
    m = 2 * n
    n1 = max(d for d in range(1, int(np.sqrt(m)) + 1) if m % d == 0)
    n2 = m // n1
    k1, j2 = np.arange(n1)[:, None], np.arange(n2)[None, :]
    tw = np.exp(-2j * np.pi * ((k1 * j2) % m) / m)
    lam = dvr_symbol(n, dx, np) / m
    return n1, n2, tw, lam[k1 + n1 * j2]


class FFTKinetic:
    """T X for the sinc-DVR's Toeplitz T of one member where its graph takes the FFT
    (:func:`dvr_by_fft`: T past 0.8 of L2, or N beyond DVR_GEMM_MAX_N), or of a scan's block
    of B members where that is faster (:func:`block_by_fft`: B transforms down the columns,
    one strided cuFFT plan), as graph nodes: T
    embedded in a circulant of size 2N (its eigenvalues ``dvr_symbol``, module
    docstring of :mod:`tdse.model.hamiltonian`), so T X is the first N rows of
    IFFT(lam FFT([X; 0])) -- the launched path's product (``BlockOperator._kinetic``), here
    with cuFFT plans made once (their work areas fixed: capturable) and no temporaries: X is
    one of this object's :meth:`buffer` views (the first N rows of 2N whose rest stays zero,
    so no copy pads it), the transforms into F, the symbol times 1/2N (the inverse's
    normalisation) in between, T X the first N rows of F.  The transforms by the four-step
    FFT (:func:`four_step_tables`: 4 FFT passes, 3 elementwise nodes) where 2N has a factor
    >= FOUR_STEP_MIN, else one cuFFT call each way.  Instead of the dense T's N^2 reads: at
    N = 8192 the launched path's ~0.15 ms of Python a term, or a GEMV's 0.5 GB a term."""

    def __init__(self, cp, grid, B):
        from ..model.hamiltonian import dvr_symbol
        wanted = FOUR_STEP and B == 1
        from cupy.cuda import cufft
        n = self.n = grid.n
        self.cp, self.cufft = cp, cufft
        self.F = cp.empty((2 * n, B), dtype=np.complex128)
        self._full = {}          # a buffer's data pointer -> its padded 2N x B array (or N1 x N2 view)
        n1, n2, tw, lam = four_step_tables(n, grid.dx)
        four_step = wanted and n1 >= FOUR_STEP_MIN
        if four_step:
            self.shape = (n1, n2)
            self.F2 = self.F.reshape(self.shape)
            # the columns: n2 FFTs of n1, element stride n2, batch distance 1 (cuFFT's
            # advanced layout, as CuPy's own N-d plans for leading axes); the rows: n1
            # contiguous FFTs of n2.  (cupyx's get_fft_plan(axes=(0,)) is not this: a 1-d
            # plan is always contiguous batches there.)  A CuPy whose PlanNd takes other
            # arguments: one call of 2N.
            try:
                self.cols = cufft.PlanNd((n1,), (n1,), n2, 1, (n1,), n2, 1, cufft.CUFFT_Z2Z,
                                         n2, "C", 0, None)
                self.rows = cufft.Plan1d(n2, cufft.CUFFT_Z2Z, n1)
            except (TypeError, ValueError, NotImplementedError):
                four_step = False
            self.tw, self.twc = cp.asarray(tw), cp.asarray(tw.conj())
            self.lam = cp.asarray(lam)
        self.four_step = four_step
        if not four_step and B == 1:
            self.plan = cufft.Plan1d(2 * n, cufft.CUFFT_Z2Z, 1)
        elif not four_step:      # B columns of 2N, element stride B, batch distance 1
            self.plan = cufft.PlanNd((2 * n,), (2 * n,), B, 1, (2 * n,), B, 1, cufft.CUFFT_Z2Z,
                                     B, "C", 0, None)
        if not four_step:
            self.lam = cp.ascontiguousarray((dvr_symbol(n, grid.dx, cp) / (2 * n))[:, None])

    def buffer(self):
        """An N x B block whose storage goes on to 2N rows of zeros (the FFT's input)."""
        full = self.cp.zeros((2 * self.n, self.F.shape[1]), dtype=np.complex128)
        self._full[full.data.ptr] = full.reshape(self.shape) if self.four_step else full
        return full[:self.n]

    def __call__(self, X):
        full = self._full[X.data.ptr]        # a KeyError: X is not one of the buffers
        cp, fw, inv = self.cp, self.cufft.CUFFT_FORWARD, self.cufft.CUFFT_INVERSE
        if self.four_step:
            F = self.F2
            self.cols.fft(full, F, fw)
            cp.multiply(F, self.tw, out=F)
            self.rows.fft(F, F, fw)
            cp.multiply(F, self.lam, out=F)
            self.rows.fft(F, F, inv)
            cp.multiply(F, self.twc, out=F)
            self.cols.fft(F, F, inv)
        else:
            F = self.F
            self.plan.fft(full, F, fw)
            cp.multiply(F, self.lam, out=F)
            self.plan.fft(F, F, inv)
        return self.F[:self.n]
