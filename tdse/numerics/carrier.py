"""The step that carries a run's error e: e_(j+1) = S_j e_j + L_j
(:class:`tdse.numerics.adaptive.EstimatingStepper`; Kormann, Holmgren & Karlsson, Uppsala
TR 2009-021: the global error is the sum of the local ones, each propagated to t).  e needs
a few digits of S_j, not the run's: the stated error is 2 ||e||.

:class:`SplitCarrier` (the length gauge, on the CPU) takes S_j as the Strang splitting of the
midpoint generator G = s T + diag(v), v = V(x, t_j + h/2):

    S_j e = D Q exp(-i h s diag(tau)) Q D e,   D = exp(-i h v / 2) exp(-h s W / 2)

(W the absorber, as the Chebyshev step's masks), Q the orthonormal sine transform (DST-I,
its own inverse; applied as one FFT of the odd extension of 2N + 2 points and its inverse)
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

Its cost is two FFTs of 2N + 2 points and four diagonal products a step, where the
Chebyshev carrier applies H ~9 times (atom_hhg: ~0.4 of a cfm4 step of 2 x 11 terms).  On
a GPU a run's fixed steps carry e by :class:`SplitGraphCarrier`, a piece's split steps one
captured graph, where that is the faster of the two (timed; launched from Python a step at a time they cost more than the Chebyshev
carrier's one graph launch a step: x3.9 against x1.8 on atom_hhg,
``split_carrier_h200x1_20261129T2305.txt``); adaptive steps and a scan's batch there keep
the Chebyshev carrier, and so does the velocity gauge everywhere (p is not diagonal in the
sine basis).
"""
from __future__ import annotations

import numpy as np

from ..model.absorber import absorber_profile
from ..model.field import velocity_gauge
from ..model.grid import points
from ..model.potential import total_many
from .propagators import Steps, each_step, tap

__all__ = ["SplitCarrier", "SplitGraphCarrier", "sine_symbol", "carrier"]


def sine_symbol(grid) -> np.ndarray:
    """The kinetic symbol (hartree) at k_m = pi m / (N + 1), m = 1..N: T's eigenvalues
    for the 3-point stencil with Dirichlet walls (module docstring)."""
    k = np.pi * np.arange(1, grid.n + 1) / (grid.n + 1)
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
        self.tau = sine_symbol(cfg.grid)
        W = stepper.W if hasattr(stepper, "W") else \
            (None if cfg.hermitian else absorber_profile(cfg, points(cfg.grid)))
        self.W = None if W is None else xp.asarray(W)
        self._phases = {}
        # SciPy's FFT on the host (2N + 2 = 1002 points: 38 against NumPy's 57 us), the
        # array module's own on a device
        import importlib
        self._fft = importlib.import_module("scipy.fft" if xp is np else "cupyx.scipy.fft")

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
        row a step)."""
        d = self.xp.asarray(v) * (-0.5j * self.h)
        if self.W is not None:          # (a single run's W broadcasts over the S rows)
            d = d - (0.5 * self.h * s) * self.W
        return self.xp.exp(d)

    def step(self, X, j: int, d=None):
        """e one step on from step j (``d``: its D, else from the stepper's generator)."""
        xp, n = self.xp, self.n
        s = 1.0
        if d is None:
            (s, v, *_), = self.stepper.generators(j)
            d = self._halves(v, s)
        if d.ndim < X.ndim:
            d = d[:, None]
        y = xp.zeros((2 * n + 2,) + X.shape[1:], dtype=np.complex128)
        xp.multiply(X, d, out=y[1:n + 1])
        xp.negative(y[n:0:-1], out=y[n + 2:])
        fft = self._fft
        y = fft.ifft(fft.fft(y, axis=0, overwrite_x=True) * self._kinetic(s, X.ndim), axis=0,
                     overwrite_x=True)
        Y = y[1:n + 1]
        Y *= d
        return Y

    def steps(self, X, j0: int, j1: int, taps=None):
        """e from step j0 to j1; a single run's D for all the steps at once (its potential
        at their midpoints in one pass, :func:`~tdse.model.potential.total_many`)."""
        st = self.stepper
        if hasattr(st, "W") or j1 - j0 < 2:      # (a scan's BatchStepper: a step at a time)
            return each_step(self.step, X, j0, j1, taps)
        h = self.h
        times = [st.scheme.times(j * h, h)[0] for j in range(j0, j1)]     # (the midpoint's)
        D = self._halves(total_many(st.config.potential, st.x_host, times), 1.0)
        for j in range(j0, j1):
            X = self.step(X, j, D[j - j0])
            if taps:
                tap(taps, j + 1, X)
        return X


class SplitGraphCarrier(SplitCarrier):
    """On a GPU, a run's fixed steps: a piece's split steps (:class:`SplitCarrier`'s
    arithmetic) as one captured CUDA graph (:meth:`carry`), each local error added in it:
    per step two elementwise kernels, cuFFT's transform of 2N + 2 points each way
    (one plan, made once), the kinetic phases and D.  The graph reads e, the piece's D
    (computed on the device from V at the midpoints, one pinned upload) and local errors
    from buffers of its own; one graph per piece length.  Taken where it is faster than the
    Chebyshev carrier's graph steps, timed when the run's carrier is made
    (:meth:`faster_than`; one H200: the laser drive, N = 320 and 13 Chebyshev terms a
    step, x1.99 -> 1.74 the run without the estimate; atom_hhg, N = 500 and 9 terms, x1.80
    -> 2.01, `time-error_h200x1_20261129T234730.json`)."""

    def __init__(self, stepper, xp):
        super().__init__(stepper, xp)
        from cupy.cuda import cufft
        from mgemm.arrays import PinnedUpload
        n = self.n
        self.cufft = cufft
        self.plan = cufft.Plan1d(2 * n + 2, cufft.CUFFT_Z2Z, 1)
        self.K = self._kinetic(1.0, 1) / (2 * n + 2)         # (the inverse's normalisation)
        self.y = xp.zeros(2 * n + 2, dtype=np.complex128)
        self.e = xp.zeros(n, dtype=np.complex128)
        self.D = self.L = None
        self.up, self.graphs = PinnedUpload(xp, ring=2), {}

    def _body(self, S):
        cp, n, y, e, fw, inv = self.xp, self.n, self.y, self.e, self.cufft.CUFFT_FORWARD, self.cufft.CUFFT_INVERSE
        for k in range(S):
            cp.multiply(e, self.D[k], out=y[1:n + 1])
            cp.negative(y[n:0:-1], out=y[n + 2:])
            self.plan.fft(y, y, fw)
            cp.multiply(y, self.K, out=y)
            self.plan.fft(y, y, inv)
            cp.multiply(y[1:n + 1], self.D[k], out=e)
            cp.add(e, self.L[k], out=e)

    def faster_than(self, stepper, S=16, repeat=3):
        """Whether :meth:`carry` over S steps takes less of the device's time than
        ``stepper``'s own steps with the S adds (the Chebyshev carrier: its terms grow with
        the spectral radius times dt, the split step's cost with the FFT of 2N + 2 points),
        each timed ``repeat`` times on a fresh random e and local errors after a warm-up."""
        cp, n = self.xp, self.n
        j1 = min(S, self.stepper.config.time.steps)
        e = cp.random.standard_normal(n) + 1j * cp.random.standard_normal(n)
        L = 1e-3 * (cp.random.standard_normal((j1, n)) + 1j * cp.random.standard_normal((j1, n)))
        taps = {k + 1: [lambda Y, k=k: Y.__iadd__(L[k])] for k in range(j1)}
        seconds = []
        for go in (lambda: self.carry(e, 0, j1, L), lambda: stepper.advance(e.copy(), 0, j1, taps=taps)):
            go()
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(repeat):
                go()
            stop.record()
            stop.synchronize()
            seconds.append(cp.cuda.get_elapsed_time(start, stop))
        self.choice_ms = tuple(s / repeat for s in seconds)
        return seconds[0] < seconds[1]

    def carry(self, e, j0: int, j1: int, Ls):
        """e carried from step j0 to j1 with ``Ls`` (S x N, where it lives) added after each
        step: one graph launch.  Returns this carrier's own buffer (overwritten by the next
        call: a caller keeps a copy)."""
        from .graphs import capture
        cp, n, S, h, st = self.xp, self.n, j1 - j0, self.h, self.stepper
        if self.D is None or self.D.shape[0] < S:
            self.D = cp.empty((S, n), dtype=np.complex128)
            self.L = cp.empty((S, n), dtype=np.complex128)
            self.graphs = {}
        V = total_many(st.config.potential, st.x_host, [st.scheme.times(j * h, h)[0] for j in range(j0, j1)])
        self.up.put(V.ravel())
        d = self.up.dev[:V.size].reshape(S, n) * (-0.5j * h)
        if self.W is not None:
            d -= (0.5 * h) * self.W
        cp.exp(d, out=self.D[:S])
        self.L[:S] = Ls
        if e is not self.e:
            self.e[...] = e
        if S not in self.graphs:
            self.graphs[S] = capture(cp, lambda: self._body(S))
        self.graphs[S].launch()
        return self.e


def carrier(stepper, xp=np, graph=False):
    """The carrier for ``stepper`` (the Chebyshev midpoint step of
    :func:`~tdse.numerics.adaptive.transport_config`) in the length gauge: :class:`SplitCarrier`
    on the host; on a GPU with ``graph`` (a run's fixed steps, :meth:`SplitGraphCarrier.carry`)
    :class:`SplitGraphCarrier`; else ``stepper`` itself (module docstring)."""
    cfg = stepper.config
    if velocity_gauge(cfg.potential.field) or getattr(getattr(stepper, "potential", None), "velocity", False):
        return stepper
    if xp is np:
        return SplitCarrier(stepper, xp)
    if graph and not hasattr(stepper, "W") and cfg.run.graphs:
        split = SplitGraphCarrier(stepper, xp)
        return split if split.faster_than(stepper) else stepper
    return stepper
