"""The step that carries a run's error e: e_(j+1) = S_j e_j + L_j
(:class:`tdse.numerics.adaptive.EstimatingStepper`; Kormann, Holmgren & Karlsson, Uppsala
TR 2009-021: the global error is the sum of the local ones, each propagated to t).  e needs
a few digits of S_j, not the run's: the stated error is 2 ||e||.

:class:`SplitCarrier` (the length gauge, on the CPU) takes S_j as the Strang splitting of the
midpoint generator G = s T + diag(v), v = V(x, t_j + h/2):

    S_j e = D Q exp(-i h s diag(tau)) Q D e,   D = exp(-i h v / 2) exp(-h s W / 2)

(W the absorber, as the Chebyshev step's masks), Q the orthonormal sine transform (DST-I,
its own inverse; applied as one FFT of the odd extension of 2N' + 2 points and its inverse;
on the host up to N = :data:`DENSE_MAX_N` the kinetic factor is one dense N x N product)
and tau the kinetic symbol at the sine basis' wave numbers k_m = pi m / (N + 1),
m = 1..N (:func:`sine_symbol`).  Q diag(tau) Q is the 3-point T exactly (Dirichlet walls:
the walls the run's T has); for the 5-point T it differs in the two corner entries (the
ghost point -psi_1 against the run's 0); for the DVR it is the sine-DVR's kinetic energy (a
box of hard walls; the run's is the sinc-DVR's section, Colbert & Miller 1992), the same
symbol k^2 / (2 dx^2).  The step is unitary (with W = 0); its error is the splitting's,
O(h^3) a step (Strang), and near the walls the kinetic energy's.  Measured against the
Chebyshev midpoint carrier at 1e-6 (:func:`tdse.numerics.adaptive.transport_config`) on the
four random drives of :mod:`benchmarks.drives` (4 seeds x cfm4 / midpoint, 32 runs):
stated / true the same to 1 % but two DVR runs (ramped cfm4: 3.13 -> 3.82, 2.06 -> 2.16;
``benchmarks/results/split_carrier_cpu2_20261129T2330.txt``); on 24 draws of the ramped
drive, where psi nears the walls, 1.56-4.65 against the Chebyshev carrier's 1.95-3.18
(``split_carrier_ramped_cpu2_20261129T2352.txt``): each within 1-10x.

The transforms are made on the carrier's box of N' >= N points (:func:`sine_box`: the
least with 2 (N' + 1) a product of 2, 3 and 5), the run's N in its middle and D = 0 on the
points added: e that leaves the run's box in a step is dropped (an absorbing edge where the
run has walls; N' = N where 2 (N + 1) is such a product already).  2 (N + 1) has a large
prime for most N -- 514 = 2 x 257 (the main job's N = 256), 642 = 2 x 3 x 107, 16386 = 2 x
3 x 2731 -- and pocketfft's transform of it took 14.9, 17.6, 943 us against 3.4, 3.6, 103
us at 540, 648, 17280 points on 2 CPUs; the laser drive's estimate x1.38 -> x1.31 of the
run without it (``time-error_cpu2_20261202T153851.json``).  Stated / true on the four
drives (3 seeds x cfm4 / midpoint) moved by at most 7 % (1.85-2.19;
``split_carrier_box_cpu2_20261202T1537.txt``), on the 24 ramped draws 1.29-2.15 against
1.56-4.65 (``split_carrier_ramped_box_cpu2_20261202T1537.txt``): each still a bound
within 1-10x.

Its cost is two FFTs of 2N' + 2 points and four diagonal products a step, where the
Chebyshev carrier applies H ~9 times (atom_hhg: ~0.4 of a cfm4 step of 2 x 11 terms).  On
a GPU (a single run, N' <= :data:`SPLIT_DEVICE_MAX`) a piece's split steps are one launch of
a cooperative kernel (:data:`tdse.backends.cupy.split.SPLIT`: Q as the DST-I's dense
matrix, a warp a row, two grid barriers a step; :meth:`SplitCarrier.carry`), 9.6-10.7 us a
step on one H200 at N = 500 / 320 against the Chebyshev carrier's graph steps' 36-58 us
(``split_gpu_h200x1_20261130T0107.txt``); the same numbers as the host's FFTs to 1e-12
(tests/test_gpu.py).  Launched from Python the split step had cost atom_hhg x3.9 against
x1.8 (``split_carrier_h200x1_20261129T2305.txt``), as a captured graph a piece laser 1.74
but atom_hhg 2.01 (cc07234, ``split_graph_h200x1_20261129T2353.txt``).  A scan's batch on
a GPU and the velocity gauge keep the Chebyshev carrier (p is not diagonal in the sine
basis).
"""
from __future__ import annotations

import numpy as np

from ..model.absorber import absorber_profile
from ..model.field import velocity_gauge
from ..model.grid import points
from ..model.ffts import fft_axis0
from ..model.potential import total_many
from .propagators import Steps, each_step, tap

__all__ = ["SplitCarrier", "sine_symbol", "sine_transform", "carrier"]


def sine_box(n: int) -> int:
    """The carrier's box: the least n' >= n with 2 (n' + 1), the odd extension's length, a
    product of 2, 3 and 5 (module docstring)."""
    m = 2 * (n + 1)
    while True:
        k = m
        for p in (2, 3, 5):
            while k % p == 0:
                k //= p
        if k == 1:
            return m // 2 - 1
        m += 2


def sine_transform(n: int) -> np.ndarray:
    """Q, the orthonormal DST-I of n points as a dense matrix (symmetric, its own inverse):
    Q_jm = sqrt(2/(n+1)) sin(pi j m / (n+1)), j, m = 1..n."""
    k = np.arange(1, n + 1)
    return np.sqrt(2.0 / (n + 1)) * np.sin(np.pi * np.outer(k, k) / (n + 1))


def sine_symbol(grid, n=None) -> np.ndarray:
    """The kinetic symbol (hartree) at k_m = pi m / (n + 1), m = 1..n (n: the grid's N
    unless given): T's eigenvalues for the 3-point stencil with Dirichlet walls on a box
    of n points (module docstring)."""
    n = grid.n if n is None else n
    k = np.pi * np.arange(1, n + 1) / (n + 1)
    h2 = grid.dx * grid.dx
    if grid.stencil == 3:
        return (1.0 - np.cos(k)) / h2
    if grid.stencil == 5:
        return (30.0 - 32.0 * np.cos(k) + 2.0 * np.cos(2.0 * k)) / (24.0 * h2)
    return k * k / (2.0 * h2)


class SplitCarrier(Steps):
    """The carrier's step by Strang splitting (module docstring) with the generators of
    ``stepper`` (a :class:`~tdse.numerics.stepper.Stepper` or a scan's
    :class:`~tdse.numerics.stepper.BatchStepper` at the midpoint scheme: one generator a
    step, the members' potentials N x B)."""
    description = "split step (Strang; the kinetic energy by the sine transform)"

    def __init__(self, stepper, xp=np):
        self.stepper, self.xp = stepper, xp
        cfg = stepper.config
        self.h, self.n = cfg.time.dt, cfg.grid.n
        self.m = sine_box(self.n)                # (the box of the transforms, lo points
        self.lo = (self.m - self.n) // 2         # added below the run's, the rest above)
        self.tau = sine_symbol(cfg.grid, self.m)
        W = stepper.W if hasattr(stepper, "W") else \
            (None if cfg.hermitian else absorber_profile(cfg, points(cfg.grid)))
        self.W = None if W is None else xp.asarray(W)
        self._phases = {}       # (the transforms: tdse.model.ffts -- SciPy's on the host, 2N + 2
        #                         = 1002 points 38 against NumPy's 57 us; cupyx's on a device)

    def _kinetic(self, s, ndim):
        """exp(-i h s tau) on the odd extension's 2N + 2 frequencies (even in k: an odd
        vector stays odd), as a column for a block."""
        key = (s, ndim)
        if key not in self._phases:
            p = np.exp(-1j * self.h * s * self.tau)
            ext = np.concatenate([[1.0], p, [1.0], p[::-1]])
            self._phases[key] = self.xp.asarray(ext if ndim == 1 else ext[:, None])
        return self._phases[key]

    def _halves(self, v, s):
        """D = exp(-i h v / 2) exp(-h s W / 2) of potentials ``v`` (N, N x B, or S x N: a
        row a step) on the run's points (on the carrier's box D is 0 outside them)."""
        d = self.xp.asarray(v) * (-0.5j * self.h)
        if self.W is not None:          # (a single run's W broadcasts over the S rows)
            d = d - (0.5 * self.h * s) * self.W
        return self.xp.exp(d)

    def _dense(self, s):
        """The kinetic factor on the run's points as one dense N x N matrix, P Q exp(-i h s
        diag(tau)) Q P^T (P the run's N points of the carrier's box; Q symmetric), made once
        for each s (:data:`DENSE_MAX_N`)."""
        key = ("dense", s)
        if key not in self._phases:
            Q = sine_transform(self.m)[self.lo:self.lo + self.n]
            self._phases[key] = (Q * np.exp(-1j * self.h * s * self.tau)) @ Q.T
        return self._phases[key]

    def step(self, X, j: int, d=None):
        """e one step on from step j (``d``: its D, else from the stepper's generator)."""
        xp, n = self.xp, self.n
        s = 1.0
        if d is None:
            (s, v, *_), = self.stepper.generators(j)
            d = self._halves(v, s)
        if d.ndim < X.ndim:
            d = d[:, None]
        if xp is np and n <= DENSE_MAX_N:
            Y = self._dense(s) @ (X * d)
            Y *= d
            return Y
        m, lo = self.m, self.lo         # (D is 0 outside the run's box: e there is dropped)
        y = xp.zeros((2 * m + 2,) + X.shape[1:], dtype=np.complex128)
        xp.multiply(X, d, out=y[1 + lo:1 + lo + n])
        xp.negative(y[m:0:-1], out=y[m + 2:])
        y = fft_axis0(y, True, xp)
        y *= self._kinetic(s, X.ndim)
        y = fft_axis0(y, False, xp)
        Y = y[1 + lo:1 + lo + n]
        Y *= d
        return Y

    def steps(self, X, j0: int, j1: int, taps=None):
        """e from step j0 to j1; a single run's D for all the steps at once (its potential
        at their midpoints in one pass, :func:`~tdse.model.potential.total_many`)."""
        if hasattr(self.stepper, "W") or j1 - j0 < 2:   # (a scan's BatchStepper: a step at a time)
            return each_step(self.step, X, j0, j1, taps)
        D = self._halves(self._potentials(j0, j1), 1.0)
        for j in range(j0, j1):
            X = self.step(X, j, D[j - j0])
            if taps:
                tap(taps, j + 1, X)
        return X

    def _potentials(self, j0, j1):
        """A single run's V at the midpoints of steps j0 .. j1 - 1, (j1 - j0) x N on the host,
        in one pass (:func:`~tdse.model.potential.total_many`)."""
        st, h = self.stepper, self.h
        return total_many(st.config.potential, st.x_host,
                          [st.scheme.times(j * h, h)[0] for j in range(j0, j1)])

    @property
    def one_launch(self) -> bool:
        """Whether :meth:`carry` takes a piece in one kernel (a single run on a GPU)."""
        return self.xp is not np and not hasattr(self.stepper, "W")

    def carry(self, e, k0: int, Ls, taps=None):
        """e carried from step k0 over the steps of ``Ls`` (S x N on the device), L_i added
        after step k0 + i, in one launch of :data:`tdse.backends.cupy.split.SPLIT`: the
        step as above with Q the DST-I's N' x N' matrix on the carrier's box (Q_jm =
        sqrt(2/(N'+1)) sin(pi j m / (N'+1)), j, m = 1..N'; e, D and the L_i 0 outside the
        run's points), each step's D from the potentials of the piece made at once;
        ``taps`` ({step: [callable]}): their callables given e after that step, which the
        kernel writes into a row of its own (a device array nothing changes later; a launch
        up to each such step had cost the laser drive's pieces, a snapshot every 10 steps,
        ~4 ms of host time a piece on one H200, ``estimate_split_host_h200x1_20261130T1725.txt``)."""
        from mgemm.arrays import PinnedUpload

        from ..backends.cupy.split import SPLIT_WARPS, split_kernel
        cp, n, h, lo, m = self.xp, self.n, self.h, self.lo, self.m
        S = len(Ls)
        if S == 0:
            return e
        L = cp.ascontiguousarray(Ls if getattr(Ls, "ndim", 0) == 2 else cp.stack(Ls), dtype=np.complex128)
        if m > n:
            L = _widened(cp, L, lo, m)
        if getattr(self, "_dev", None) is None:
            Q = sine_transform(m)
            sms = cp.cuda.Device().attributes["MultiProcessorCount"]
            self._dev = {"Q": cp.asarray(Q), "ph": cp.asarray(np.exp(-1j * h * self.tau)),
                         "y": cp.zeros(m, np.complex128), "z": cp.zeros(m, np.complex128),
                         "bar": cp.zeros(2, np.uint32), "grid": (min(-(-m // SPLIT_WARPS), sms),),
                         "up": PinnedUpload(cp, ring=2), "up_tap": PinnedUpload(cp, ring=2)}
        d = self._dev
        # the piece's potentials at the steps' midpoints in one pass, uploaded pinned (a
        # pageable upload waits for the steps queued before it: atom_hhg's carrier had then
        # cost 40 us a step on one H200, the host's work not overlapping the device's)
        V = self._potentials(k0, k0 + S)
        d["up"].put(V.ravel())
        D = cp.ascontiguousarray(self._halves(d["up"].dev[:V.size].reshape(V.shape), 1.0))
        if m > n:
            D = _widened(cp, D, lo, m)
        taps = taps or {}
        marks = sorted(k - k0 for k in taps if k0 < k <= k0 + S)
        tap, rows = d["bar"], d["y"]            # (not read without marks)
        if marks:       # e at the tapped steps written by the kernel into rows of its own
            slots = np.full(S, -1, dtype=np.int32)
            slots[np.array(marks) - 1] = np.arange(len(marks), dtype=np.int32)
            d["up_tap"].put(slots)
            tap, rows = d["up_tap"].dev[:S], cp.empty((len(marks), m), dtype=np.complex128)
        out = cp.array(e, dtype=np.complex128) if m == n else _widened(cp, e[None], lo, m)[0]
        split_kernel(cp)(d["grid"], (32 * SPLIT_WARPS,),
                         (d["Q"], d["ph"], D, L, out, d["y"], d["z"], np.int32(S), np.int32(m),
                          d["bar"], np.int32(len(marks)), tap, rows), shared_mem=16 * m)
        for i, b in enumerate(marks):
            for f in taps[k0 + b]:
                f(rows[i, lo:lo + n])
        return out[lo:lo + n]


def _widened(xp, A, lo, m):
    """The rows of ``A`` (S x N) on the carrier's box of m points: N columns from lo, 0
    elsewhere."""
    out = xp.zeros((A.shape[0], m), dtype=np.complex128)
    out[:, lo:lo + A.shape[1]] = A
    return out


#: on the host a step's kinetic factor is one dense N x N product (:meth:`SplitCarrier._dense`)
#: up to this N, the sine FFTs beyond: a step 2.2 / 3.8 / 5.5 / 9.3 us against 4.9 / 6.3 /
#: 7.6 / 8.9 at N = 64 / 128 / 192 / 256 (2 CPUs, the same e to 4e-14), and a run that needs
#: no other FFT does not import scipy.fft (~45 ms a process: tiny's `tdse run` had printed
#: its estimate at +71 % of the stepping time, +9 % now; its wall 0.43 -> 0.38 s)
#: (``benchmarks/results/carrier_dense_cpu2_20261203T1000.txt``)
DENSE_MAX_N = 192

#: a GPU's split carrier up to this N' (:func:`sine_box`): the kernel stages a vector in shared memory (16 N
#: bytes of 48 KiB) and reads Q's N^2 values from L2 twice a step
SPLIT_DEVICE_MAX = 3072


def carrier(stepper, xp=np):
    """The carrier for ``stepper`` (the Chebyshev midpoint step of
    :func:`~tdse.numerics.adaptive.transport_config`): :class:`SplitCarrier` in the length
    gauge -- on a GPU for a single run up to N' = :data:`SPLIT_DEVICE_MAX` (a piece in one
    kernel, :meth:`SplitCarrier.carry`) --, else ``stepper`` itself (module docstring)."""
    cfg = stepper.config
    if velocity_gauge(cfg.potential.field) or \
            getattr(getattr(stepper, "potential", None), "velocity", False):
        return stepper
    if xp is not np and (hasattr(stepper, "W") or sine_box(cfg.grid.n) > SPLIT_DEVICE_MAX):
        return stepper                  # (a scan's batch on a GPU; a large N)
    return SplitCarrier(stepper, xp)
