"""Observables of a state (atomic units; psi normalised as sum |psi|^2 dx = 1).

:data:`OBSERVABLES` is the one table of what a run measures (name, unit, description, dims):
the run file's and the scan file's datasets are labelled from it.  A block of states is
measured by the grid sums of :data:`SUMS` (each the sum over the grid of one point
quantity, written once as a formula: the GPU kernel is generated from them,
:mod:`tdse.backends.cupy.measure`), and :meth:`BlockMeasure.finish` makes the observables
from the sums.  :class:`Measure` computes a row of one state directly (a reference for the
block path, and the populations in the eigenstates of H(t))."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..expression import parse

from .absorber import absorber_profile
from .field import field_value, vector_potential, velocity_gauge
from .hamiltonian import Operator, kinetic_bands
from .potential import gradient, total


@dataclass(frozen=True)
class Observable:
    """One observable: its dataset's name, unit and description (atomic units), the dims of
    a row ("state": one value per eigenstate), its dtype, and whether a block of members
    (a scan) measures it (those needing an eigensolve a row do not)."""
    name: str
    unit: str
    description: str
    dims: tuple = ()
    dtype: type = np.float64
    block: bool = True


#: what a run measures, in the run file's order (tdse.run.snapshots adds t and step)
OBSERVABLES = (
    Observable("norm", "1", "sum |psi|^2 dx"),
    Observable("energy", "hartree", "<psi|H(t)|psi> / <psi|psi>, H(t) = T + V(t) + x E(t) "
               "(velocity gauge: T + A(t) p + A(t)^2/2 + V(t); without the absorber): "
               "divided by the remaining norm"),
    Observable("x_mean", "bohr", "<x> = <psi|x|psi> / <psi|psi>: divided by the remaining norm"),
    Observable("x_width", "bohr", "the packet's width sqrt(<x^2> - <x>^2), both divided by the "
               "remaining norm (|...|: a rounding-level negative of a point-like state is no NaN)"),
    Observable("p_mean", "hbar/bohr", "the kinetic momentum <p> = <psi|-i d/dx|psi> / <psi|psi> "
               "(spectral derivative; + A(t) in the velocity gauge: the same in both gauges): "
               "divided by the remaining norm"),
    Observable("acceleration", "bohr/(hbar/E_h)^2", "dipole acceleration <psi|-dV/dx|psi>, NOT "
               "divided by the norm (what HHG spectra with an absorber use: the absorbed part "
               "radiates no more; Ehrenfest's d^2<x>/dt^2 without an absorber)"),
    Observable("acceleration_normalised", "bohr/(hbar/E_h)^2",
               "<psi|-dV/dx|psi> / <psi|psi>: divided by the remaining norm"),
    Observable("field", "E_h/(e bohr)", "the laser field E(t) (0 without one)"),
    Observable("yield", "1", "1 - norm: the norm the absorber took (ionisation yield), or the "
               "norm drift"),
    Observable("layer_norm", "1", "norm still inside the absorbing layers, sum over W > 0 of "
               "|psi|^2 dx (0 without an absorber)"),
    Observable("yield_flux", "1", "the norm that entered the absorbing layers: 1 - norm + "
               "layer_norm (the yield counted as flux; 1 - norm misses what is still in the layers)"),
    Observable("autocorrelation", "1", "<psi(0)|psi(t)>", dtype=np.complex128),
    Observable("n_mean", "1", "population-weighted node number sum_n n P_n(t), P_n in the "
               "eigenstates of H(t) (n < output.populations); NaN between "
               "output.populations_every", block=False),
    Observable("populations_h0", "1", "|<phi_n(0)|psi(t)>|^2, eigenstates of H(0) (a scan's "
               "member: its own)", ("state",)),
    Observable("populations_ht", "1", "|<phi_n(t)|psi(t)>|^2, instantaneous eigenstates of the "
               "molecular H(t) (no field, no absorber); NaN between output.populations_every",
               ("state",), block=False),
    Observable("energies_ht", "hartree", "eigenvalues of the molecular H(t) (NaN between "
               "output.populations_every)", ("state",), block=False),
)

#: the grid sums of a block's observables (:meth:`BlockMeasure.raw`'s "sums", in this
#: order): each the sum over the grid of a point quantity in w = |psi_i|^2, layer (1 in the
#: absorbing layers), x, g = dV/dx, h = Re psi_i* (H psi)_i, c0 = psi(0)_i* psi_i, k and
#: f2 = |F_k|^2 (F = FFT psi, Parseval's <p>), edge (1 within 10 points of a wall); a new
#: observable adds its sums at the end
SUMS = {name: parse(text, ("w", "layer", "x", "g", "h", "c0_re", "c0_im", "k", "f2", "edge"),
                    f"SUMS[{name!r}]")
        for name, text in (("w", "w"), ("layer", "layer * w"), ("x", "x * w"), ("force", "w * g"),
                           ("h", "h"), ("c0_re", "c0_re"), ("c0_im", "c0_im"), ("p", "k * f2"),
                           ("edge", "edge * w"), ("x2", "x * x * w"))}
#: where each sum sits in "sums"
SUM_INDEX = {name: j for j, name in enumerate(SUMS)}
#: a row's costly parts -- the sum "h" (a kinetic product of the block), "p" (an FFT of it),
#: the amplitudes "amps" (a GEMM) -- and the observables that read them: a row may skip those
#: whose observables it does not keep (:meth:`BlockMeasure.raw`'s ``skip``: NaN there)
COSTLY = {"h": ("energy",), "p": ("p_mean",), "amps": ("populations_h0",)}


def skippable(keep) -> tuple:
    """The parts of :data:`COSTLY` that no observable in ``keep`` reads."""
    return tuple(part for part, names in COSTLY.items() if not set(names) & set(keep))


def norm(psi, dx):
    return float(np.sum(np.abs(psi) ** 2) * dx)


def x_mean(x, psi, dx):
    """<x> = sum x |psi|^2 dx / sum |psi|^2 dx."""
    w = np.abs(psi) ** 2
    return float(np.sum(x * w) / np.sum(w))


def x_width(x, psi):
    """sqrt(<x^2> - <x>^2), both divided by sum |psi|^2."""
    w = np.abs(psi) ** 2
    m = np.sum(x * w) / np.sum(w)
    return float(np.sqrt(max(np.sum((x - m) ** 2 * w) / np.sum(w), 0.0)))


def p_mean(psi, dx):
    """<p> = <psi| -i d/dx |psi> / <psi|psi>, the derivative spectral (FFT; psi ~ 0 at the
    walls)."""
    k = 2 * np.pi * np.fft.fftfreq(psi.size, d=dx)
    dpsi = np.fft.ifft(1j * k * np.fft.fft(psi))
    return float(np.real(np.vdot(psi, -1j * dpsi)) / np.real(np.vdot(psi, psi)))


def acceleration(psi, dVdx, dx=None):
    """Dipole acceleration <-dV/dx>: with ``dx`` the un-normalised expectation value
    -sum |psi|^2 dV/dx dx (what HHG codes with absorbers use: the part of psi the absorber
    took radiates no more), without it divided by the remaining norm (Ehrenfest's
    d^2<x>/dt^2 for a Hermitian H, where the two agree)."""
    w = np.abs(psi) ** 2
    if dx is not None:
        return float(-np.sum(w * dVdx) * dx)
    return float(-np.sum(w * dVdx) / np.sum(w))


def autocorrelation(psi0, psi, dx):
    """<psi(0)|psi(t)>."""
    return complex(np.vdot(psi0, psi) * dx)


def edge_norm(psi, dx, points=10):
    """The norm within ``points`` grid points of either wall."""
    w = np.abs(psi) ** 2
    return float((w[:points].sum() + w[-points:].sum()) * dx)


def populations(phi, psi, dx):
    """|<phi_n|psi>|^2 for each row phi_n of phi (real eigenvectors)."""
    return np.abs(phi @ psi * dx) ** 2


def n_mean(P):
    """The population-weighted node number sum_n n P_n (eigenstate n has n nodes): a
    smooth observable that converges with the grid, unlike the node count of a driven
    complex psi (which generically has no zeros at all)."""
    P = np.asarray(P)
    return float(np.arange(P.shape[-1]) @ P)


def _kept_real(psi, eps):
    """(kept, r): r the real part of psi rotated real where |psi| is largest (times that
    |psi|), kept the points where |psi| > eps * max|psi| (compared squared); None for psi =
    0 (:func:`node_positions`)."""
    psi = np.asarray(psi)
    re, im = psi.real, psi.imag
    a2 = re * re
    a2 += im * im                              # |psi|^2: no square root a point
    j = int(np.argmax(a2))
    if a2[j] == 0:
        return None
    # Re(conj(psi_j) psi) = |psi_j| Re(psi e^{-i arg psi_j}): the rotated real part times
    # |psi_j| > 0 -- the same signs, and the same zeros by linear interpolation
    c = complex(psi[j])
    r = re * c.real
    r += im * c.imag
    return a2 > (eps * eps) * a2[j], r


def node_positions(x, psi, eps=1e-2):
    """Sign changes of the real part of psi after removing its global phase.

    psi is rotated so that it is real where |psi| is largest; only the points where
    |psi| > eps * max|psi| are kept, and a node is counted between two *successive kept
    points* whose real parts differ in sign -- points below the threshold are skipped,
    so a sign change across such a gap counts once, placed by linear interpolation
    between the two kept neighbours (which may lie far apart).  The n-th eigenstate of
    a 1D H has n nodes; for a driven, complex psi the count depends on eps and on the
    time sampling (README), so report :func:`n_mean` alongside it."""
    kr = _kept_real(psi, eps)
    if kr is None:
        return np.empty(0)
    keep, r = kr
    xr, rr = np.asarray(x)[keep], r[keep]
    i = np.flatnonzero(rr[:-1] * rr[1:] < 0)
    return xr[i] - rr[i] * (xr[i + 1] - xr[i]) / (rr[i + 1] - rr[i])


def node_count(x, psi, eps=1e-2):
    """How many nodes :func:`node_positions` places (the sign changes between successive
    kept points, counted without placing them: a snapshot's count every few steps)."""
    return int(node_counts(x, np.asarray(psi)[None], eps)[0])


def node_counts(x, rows, eps=1e-2):
    """:func:`node_count` of each row of ``rows`` (R x N) at once: :func:`_kept_real`'s
    operations element by element on the whole block (the same values, so the same
    counts), then the sign changes between successive kept points of a row -- a few array
    passes for R rows where a row at a time took a dozen NumPy calls each: a GPU run's
    writer thread counted its blocks of ~230 rows at N = 8192 in 110-120 ms that way, 0.8 s
    of a 1.25 s run, its small calls taking the GIL from the loop's thread
    (``loop_parts_h200x1_20261130T2104.txt``)."""
    P = np.asarray(rows)
    R, n = P.shape
    if not n:
        return np.zeros(R, dtype=np.int64)
    re, im = P.real, P.imag
    a2 = re * re
    a2 += im * im                              # |psi|^2 of every row
    at = np.arange(R)
    j = np.argmax(a2, axis=1)
    top, c = a2[at, j], P[at, j]
    r = re * c.real[:, None]
    r += im * c.imag[:, None]
    keep = a2 > ((eps * eps) * top)[:, None]   # (a row of zeros keeps none: 0 nodes)
    flat, row = r[keep], np.repeat(at, np.count_nonzero(keep, axis=1))
    change = (flat[:-1] * flat[1:] < 0) & (row[:-1] == row[1:])   # (within a row)
    return np.bincount(row[:-1][change], minlength=R)


class Measure:
    """Every observable of a state at time t (one row of /observables), with what does not
    change during a run built once: the grid, the lowest eigenstates ``phi0`` of H(0),
    psi(0) and the kinetic operator T (energies are <psi|T psi> + sum v |psi|^2 dx, never a
    rebuilt H)."""

    def __init__(self, config, x, phi0, psi0):
        self.config, self.x, self.phi0, self.psi0 = config, x, phi0, psi0
        self.kinetic = Operator(config, 1.0, np.zeros(config.grid.n), np)
        self.layers = absorber_profile(config, x) > 0     # the absorbing layers (or none)

    def canonical(self, psi):
        """<psi|p|psi> / <psi|psi> with the grid's own p (the one in H's A p)."""
        if getattr(self, "_p", None) is None:
            self._p = Operator(self.config, 0.0, np.zeros(self.config.grid.n), np, a=1.0)
        return float(np.real(np.vdot(psi, self._p(psi))) / np.real(np.vdot(psi, psi)))

    def energy(self, psi, v):
        """<psi|T + diag(v)|psi> / <psi|psi>."""
        hpsi = self.kinetic(psi)
        hpsi += v * psi
        return float(np.real(np.vdot(psi, hpsi)) / np.real(np.vdot(psi, psi)))

    def __call__(self, t, psi, states) -> dict:
        """``states`` = (E, phi) of the molecular H(t), or None: this row without the
        populations in them (NaN, and <n>; ``output.populations_every``)."""
        cfg, x = self.config, self.x
        dx = cfg.grid.dx
        if states is None:
            Et = Pt = np.full(len(self.phi0), np.nan)
        else:
            Et, phit = states
            Pt = populations(phit, psi, dx)
        nrm = norm(psi, dx)
        inside = float(np.sum(np.abs(psi[self.layers]) ** 2) * dx)
        dV = gradient(cfg.potential, x, t)
        p, energy = p_mean(psi, dx), self.energy(psi, total(cfg.potential, x, t))
        if velocity_gauge(cfg.field):      # H's A p + A^2/2; the kinetic momentum p + A
            A = vector_potential(cfg.field, t)
            energy += A * self.canonical(psi) + 0.5 * A * A
            p += A
        return {"t": t, "norm": nrm, "yield": 1.0 - nrm, "layer_norm": inside,
                "yield_flux": 1.0 - nrm + inside, "energy": energy,
                "x_mean": x_mean(x, psi, dx), "x_width": x_width(x, psi), "p_mean": p,
                "acceleration": acceleration(psi, dV, dx),
                "acceleration_normalised": acceleration(psi, dV),
                "field": field_value(cfg.potential.field, t),
                "autocorrelation": autocorrelation(self.psi0, psi, dx), "n_mean": n_mean(Pt),
                "populations_h0": populations(self.phi0, psi, dx), "populations_ht": Pt,
                "energies_ht": Et}


class BlockMeasure:
    """The observables of B members at once (psi an N x B block on the device of ``xp``,
    each column a member with its own configuration on one grid): per member norm, yield,
    layer_norm, yield_flux, <H>, <x>, <p>, the acceleration (un-normalised and
    normalised), E(t), the autocorrelation and the populations in the member's own
    eigenstates of H(0) -- the definitions of :class:`Measure`, vectorised over the columns
    and computed where psi lives; only the B-vectors come back to the host.  (Populations in
    the eigenstates of H(t) and <n> need an eigensolve per member and observation: a scan
    leaves them out.)  ``phi0`` (B, K, N); ``psi0`` (N, B), or (N, 1) for one psi(0) of every
    member."""

    NAMES = tuple(o.name for o in OBSERVABLES if o.block)

    def __init__(self, configs, x, phi0, psi0, xp=np):
        from .hamiltonian import BlockOperator
        from .potential import batch
        self.configs, self.xp = list(configs), xp
        self.dx = configs[0].grid.dx
        self.x = xp.asarray(x)
        B = len(self.configs)
        phi0 = np.asarray(phi0)                    # (B, K, N)
        # members sharing one molecule share their eigenstates: one GEMM for all populations
        # (a broadcast array shares them by its strides: no B K N comparisons)
        self.shared = phi0.shape[0] == 1 or phi0.strides[0] == 0 or bool(np.all(phi0 == phi0[:1]))
        self.phi0 = xp.asarray(phi0[0] if self.shared else phi0)
        # (N, B), or (N, 1): one psi(0) for every member, repeated on the host (its sums by
        # einsum); on a GPU one column, read with a member stride of 0 (:meth:`raw`: a single
        # run's time block of 512 states at N = 8192 had read a 64 MB repeat of it a block)
        psi0 = xp.asarray(psi0, dtype=np.complex128)
        if psi0.shape[1] == 1 and B > 1 and xp is np:
            psi0 = xp.broadcast_to(psi0, (psi0.shape[0], B))
        self.psi0 = xp.ascontiguousarray(psi0)
        self.potential = batch([c.potential for c in configs], x, xp)
        self.kinetic = BlockOperator(configs[0].grid, 1.0, xp.zeros((len(x), B)), xp)
        one = all(c is self.configs[0] for c in self.configs)       # one configuration, B times
        layers = np.stack([absorber_profile(c, np.asarray(x)) > 0
                           for c in (self.configs[:1] if one else self.configs)], axis=1)
        if xp is np:                           # (one column on a GPU, as psi0)
            layers = np.ascontiguousarray(np.broadcast_to(layers, (len(x), B)))
        self.layers, self._any_layer = xp.asarray(layers), bool(layers.any())
        if xp is np:
            self.layers = layers.astype(np.float64)     # summed against |psi|^2 (einsum)
        self.k = xp.asarray(2 * np.pi * np.fft.fftfreq(len(x), d=self.dx))
        self.x2 = self.x.ravel() ** 2          # the host's x^2 sum (_host_raw)
        # the host's <T> of a stencil (_host_raw): its bands, scaled; psi(0)* once
        st = configs[0].grid.stencil
        self._bands = None if xp is not np or st not in (3, 5) else \
            tuple(self.kinetic.k * c for c in kinetic_bands(st, self.dx))
        self._psi0c = self.psi0.conj() if xp is np else None
        self._by_order = {}                    # host arrays in a block's memory order (_in)
        self._constants = {}                   # a skipped row's NaN parts (_skipped)

    def __call__(self, t, X, host=True) -> dict:
        """The row at time t; ``host=False`` keeps it on the device (the caller copies).
        The grid sums (:meth:`raw`; on a GPU one kernel), finished on the host."""
        if self.xp is not np:
            r = self.raw(t, X)
            if not host:        # finished on the device: one row, no copy
                cols = {k: self.xp.stack([r[k]]) for k in ("sums", "amps")}
                return {k: v[0] for k, v in self.finish([t], cols, self.xp).items()}
            return {k: v[0] for k, v in self.finish([t], stack_rows([r], self.xp)).items()}
        return {k: v[0] for k, v in self.finish([t], stack_rows([self._host_raw(t, X)], np)).items()}

    @property
    def device(self) -> bool:
        """Whether :meth:`raw` applies (psi on a GPU)."""
        return self.xp is not np

    def raw(self, t, X, also=None, times=None, skip=()) -> dict:
        """What the observables at t need, on the device, left unfinished so that a row is
        a few launches and no synchronisation (:meth:`finish` makes them on the host from
        the stacked rows): "sums" (len(SUMS), B) = per member (:data:`SUMS`) sum |psi|^2, the same in the
        absorbing layers, x |psi|^2, dV/dx |psi|^2, Re psi* H psi, Re and Im psi0* psi,
        sum k |F_k|^2 (F = FFT psi, Parseval's <p>), |psi|^2 within 10 points of a wall;
        "amps" the amplitudes phi0 psi (K x B, or B x K when the members' eigenstates
        differ); with ``also`` (M x N) "also" = also @ psi.  One kernel
        (:data:`MEASURE_KERNEL`) evaluates V and dV/dx from the uploaded parameters.
        ``times`` (B,): each member at its own time instead of all at t -- B states of one
        run at B times as one block (members that share a configuration).  ``skip``: parts
        of :data:`COSTLY` not computed, NaN in the row (a scan's rows whose observables it
        keeps only at t_end).  On a GPU, X may be the transpose of a block of rows (each
        state contiguous: a single run's time block) where T is a stencil's bands in the length
        gauge: measured as it lies (T X, FFT and sums along the rows: no transposed copies,
        three of ~47 us a block of 512 rows at N = 8192 on one H200,
        ``device_timeline_h200x1_20261203T1815.txt``), else made N x B first."""
        xp, pot = self.xp, self.potential
        if xp is np:
            return self._host_raw(t, X, also, times, skip)
        from mgemm.arrays import PinnedUpload
        if getattr(self, "_up", None) is None:
            from ..backends.cupy.measure import measure_kernels
            self._up = PinnedUpload(xp)
            self._kern, self._split = measure_kernels(xp, pot.device, tuple(SUMS.values()))
            self._xv = xp.ascontiguousarray(self.x.ravel())
            self._lay = xp.ascontiguousarray(self.layers)
        n, B = X.shape
        rows = (B > 1 and X.flags.f_contiguous and not X.flags.c_contiguous and X.dtype == np.complex128
                and self.kinetic.bands is not None and not pot.velocity)
        if not rows:
            X = xp.ascontiguousarray(X, dtype=np.complex128)
        R = X.T                                # (rows: B x N, C-contiguous)
        P = self._up(pot.pack([t], [1.0]) if times is None else self._pack_own(times))
        if "h" in skip:                        # (its sum NaN below: X read in its place)
            kin = R if rows else X
        elif rows:
            from ..backends.cupy.stencil import band_rows_kernel
            kin = xp.empty_like(R)
            band_rows_kernel(xp)(R, *self.kinetic.bands, n, kin)
            if self.kinetic.k != 1.0:
                kin = kin * self.kinetic.k
        else:
            kin, k = self.kinetic._kinetic(X)
            if k != 1.0:
                kin = kin * k
            if pot.velocity:
                kin = self._gauge_terms(kin, X, t if times is None else times)
            kin = xp.ascontiguousarray(kin)
        if "p" in skip:
            F = R if rows else X
        else:
            F = xp.fft.fft(R, axis=1) if rows else xp.ascontiguousarray(xp.fft.fft(X, axis=0))
        # each array's (point, member) strides in elements: X, kin, F; psi0; layers
        one = [(1, 0) if a.shape[1] == 1 else (B, 1) for a in (self.psi0, self._lay)]
        strides = [np.int64(s) for s in ((1, n) if rows else (B, 1)) + one[0] + one[1]]
        args = (R if rows else X, kin, self.psi0, F, self.k, self._xv, self._lay, P, pot.constants(),
                np.int32(n), np.int32(B), np.int32(pot.slots), np.int32(pot.has_field))
        if rows or B <= SPLIT_MAX_MEMBERS or n >= 128 * B:      # (rows: threads along them)
            # (rows: ROWS_POINTS points a thread -- one a thread, the blocks' reductions had
            # made a block of 512 rows at N = 8192 take 321 us against 160 + 3 x 47 copied)
            G = max(1, min(64, n // (256 * ROWS_POINTS))) if rows else max(1, min(64, -(-n // 256)))
            part = xp.empty((len(SUMS), G, B))
            self._split((G, B), (256,), args + (part, *strides))
            sums = part.sum(axis=1)
        else:
            G = measure_splits(n)
            part = xp.empty((len(SUMS), G, B))
            self._kern(((B + 31) // 32, G), (32, 8), args + (part, *strides))
            sums = part.sum(axis=1) if G > 1 else part[:, 0]
        return self._raw_out(sums, X, also, t, skip)

    def _raw_out(self, sums, X, also, t, skip=()) -> dict:
        """:meth:`raw`'s dict: the sums (those skipped NaN), the amplitudes phi0 psi (NaN
        where skipped), also @ psi, t."""
        xp = self.xp
        if skip:              # (one product: 1 where kept, NaN where skipped; made once a skip)
            sums = sums * self._skipped(("nan", skip), lambda: xp.asarray(
                [[np.nan] if name in skip else [1.0] for name in SUMS]))
        if "amps" in skip:
            K, B = self.phi0.shape[-2], X.shape[1]
            amps = self._skipped(("amps", B), lambda: xp.full(
                (K, B) if self.shared else (B, K), np.nan, dtype=np.complex128))
        else:
            amps = self.phi0 @ X if self.shared else xp.einsum("bkn,nb->bk", self.phi0, X)
        out = {"sums": sums, "amps": amps}
        if also is not None:
            out["also"] = also @ X
        out["t"] = t
        return out

    def _skipped(self, key, make):
        """A skipped row's constant array (made once a key, never written to)."""
        got = self._constants.get(key)
        if got is None:
            got = self._constants[key] = make()
        return got

    def _host_raw(self, t, X, also=None, times=None, skip=()) -> dict:
        """:meth:`raw` with NumPy: the sums of :data:`SUMS` as whole-block
        operations (a row costs a few array passes over the block instead of a dozen calls
        on its vector: the single run's rows on the CPU, :class:`tdse.run.rows.Observables`)."""
        at = t if times is None else np.asarray(times, dtype=np.float64)
        # a single run's time block comes as the transpose of its rows (each state's column
        # contiguous, "F"): measured in that layout, every sum along a contiguous column, where
        # a transposed copy and strided sums had cost ~30 % of the block (2 CPUs, N = 256)
        order = "F" if X.flags.f_contiguous and not X.flags.c_contiguous else "C"
        X = np.asarray(X, dtype=np.complex128, order=order)
        n = X.shape[0]
        w = X.real ** 2 + X.imag ** 2
        V, dV = self.potential.host_fields(at, order=order)
        if "h" in skip:
            energy = np.zeros(X.shape[1])      # (NaN in _raw_out)
        elif self._bands is not None and not self.potential.velocity:
            energy = self._stencil_kinetic(X, w)
        else:
            kin, k = self.kinetic._kinetic(X)
            if self.potential.velocity:
                kin, k = self._gauge_terms(kin * k, X, at), 1.0
            # Re X* (k kin + V X) = k Re X* kin + V w, summed over the grid
            energy = np.einsum("nb,nb->b", X.real, kin.real) + np.einsum("nb,nb->b", X.imag, kin.imag)
            if k != 1.0:
                energy *= k
        energy += np.einsum("nb,nb->b", V, w)
        c0 = np.einsum("nb,nb->b", self._in(order, "_psi0c"), X)
        F = X if "p" in skip else np.fft.fft(X, axis=0)
        layers = np.einsum("nb,nb->b", w, self._in(order, "layers")) if self._any_layer else \
            np.zeros(X.shape[1])
        # the grid sums of a column by einsum, not a matrix-vector product: BLAS's gemv gives
        # the last M mod 4 columns other bits than the same state in another column, and a
        # row's bits must not depend on where in a block it is measured (a resumed run's
        # blocks, the observables' worker's: the same file, bit for bit)
        host = {"w": w.sum(axis=0), "layer": layers, "x": np.einsum("n,nb->b", self.x.ravel(), w),
                "x2": np.einsum("n,nb->b", self.x2, w),
                "force": np.einsum("nb,nb->b", w, dV), "h": energy, "c0_re": c0.real,
                "c0_im": c0.imag, "p": np.einsum("n,nb->b", self.k, F.real ** 2 + F.imag ** 2),
                "edge": w[:10].sum(axis=0) + w[max(10, n - 10):].sum(axis=0)}
        sums = np.stack([host[name] for name in SUMS])
        return self._raw_out(sums, X, also, t, skip)

    def _in(self, order, name):
        """The host array ``name`` (N x B) in the memory ``order`` of a block (a copy made once)."""
        key = (name, order)
        if key not in self._by_order:
            self._by_order[key] = np.asarray(getattr(self, name), order=order)
        return self._by_order[key]

    def _stencil_kinetic(self, X, w):
        """Re sum_n X*_n (T X)_n of each column for a 3- or 5-point T (bands d0, d1, d2 with
        the walls' zeros): d0 sum |X|^2 + 2 sum_m d_m Re sum_n X*_n X_(n+m), the block's real
        and imaginary parts shifted by m rows -- the same sum as X* (T X) to rounding, without
        T X (on 2 CPUs at N = 256, 64 rows: ~30 us against ~85); X in either layout (views)."""
        d0, d1, d2 = self._bands
        out = d0 * w.sum(axis=0)
        for m, d in ((1, d1), (2, d2)):
            if d:
                out += (2.0 * d) * (np.einsum("nb,nb->b", X.real[:-m], X.real[m:])
                                    + np.einsum("nb,nb->b", X.imag[:-m], X.imag[m:]))
        return out

    def _gauge_terms(self, kin, X, t):
        """T X + A p X + A^2/2 X (``kin`` = T X): the velocity gauge's H without V, A per
        member at its time (<H> of the block then as in the length gauge's sums)."""
        if getattr(self, "_pm", None) is None:
            from .momentum import BlockMomentum
            self._pm = BlockMomentum(self.configs[0].grid, self.xp)
        A = self.xp.asarray(self.potential.vector(t))[None, :]
        return kin + self._pm(X) * A + (0.5 * A * A) * X

    def _pack_own(self, times):
        """:meth:`BatchPotential.pack`'s parameters with member b at ``times[b]`` (its own
        field and centres: O(B), where every member at every time was B^2)."""
        pot = self.potential
        E, X = pot.own(times)                                   # (B,), (B, C)
        per = np.concatenate([np.asarray(E, dtype=np.float64).reshape(-1, 1), X], axis=1)
        return np.concatenate([pot.header([1.0]), per.ravel()])

    def finish(self, ts, cols, xp=np) -> dict:
        """The observables (S, B[, K]) of S rows of :meth:`raw` stacked (``cols``: name ->
        (S, ...), on the host, or on the device with its ``xp``), at times ``ts``: each
        observable's one formula from the sums (:data:`SUMS`); E(t) from the parameters on
        the host."""
        S, dx, n = cols["sums"], self.dx, len(self.k)
        sum_ = {name: S[:, j] for name, j in SUM_INDEX.items()}
        wsum = sum_["w"]
        nrm, inside, force = wsum * dx, sum_["layer"] * dx, -sum_["force"]
        amps = cols["amps"]
        amps = xp.swapaxes(amps, 1, 2) if self.shared else amps          # (S, B, K)
        E = self.potential.field(np.asarray(ts, dtype=np.float64).reshape(-1, 1))
        p = sum_["p"] / (n * wsum)
        if self.potential.velocity:   # V had no x E: its force -E, and p's kinetic A
            force = force - xp.asarray(E) * wsum
            p = p + xp.asarray(np.stack([self.potential.vector(t) for t in ts]))
        return {"norm": nrm, "yield": 1.0 - nrm, "layer_norm": inside,
                "yield_flux": 1.0 - nrm + inside, "energy": sum_["h"] / wsum,
                "x_mean": sum_["x"] / wsum, "p_mean": p,
                "x_width": xp.sqrt(xp.abs(sum_["x2"] / wsum - (sum_["x"] / wsum) ** 2)),
                "acceleration": force * dx, "acceleration_normalised": force / wsum,
                "autocorrelation": (sum_["c0_re"] + 1j * sum_["c0_im"]) * dx,
                "populations_h0": xp.abs(amps * dx) ** 2, "field": E}


def stack_rows(rows, xp, copy=True):
    """Rows (dicts of arrays of one shape per key, on the device of ``xp`` or the host) as
    one array per key: one stack per key, and one copy to the host (``copy`` False: a device
    key's stack left on the device, for :class:`mgemm.arrays.HostCopy` to copy unwaited)."""
    from mgemm.arrays import to_host
    cols = {}
    for name in rows[0]:
        first = rows[0][name]
        if xp is np or np.isscalar(first) or isinstance(first, np.ndarray):
            cols[name] = np.stack([np.asarray(r[name]) for r in rows])
        else:
            stacked = xp.stack([r[name] for r in rows])
            cols[name] = to_host(stacked) if copy else stacked
    return cols


#: up to this many members (or while N >= 128 B) :meth:`BlockMeasure.raw` splits the grid
#: over blocks (a single run's sums in parallel over N); beyond, a block holds 32 members
#: (8 threads along N each: at B = 1 that kernel took ~0.5 ms at N = 8192 on an H200,
#: twice the step)
SPLIT_MAX_MEMBERS = 16
#: a block of rows measured as it lies (:meth:`BlockMeasure.raw` on a GPU): the grid points a
#: thread sums before its block's reduction (a function of N alone, as every split is); a
#: choice, measured only against 1 (512 rows at N = 8192 on one H200: 21.7 against 38.2 ms
#: in 60000 steps, ``device_timeline_h200x1_20261203T1828.txt``)
ROWS_POINTS = 8

#: ... and beyond, the grid split in MEASURE_SPLIT_POINTS-point parts (at most
#: MEASURE_MAX_SPLITS; a function of N alone, so a member's sums never depend on how many
#: members share its block): a single run's time block of 512 states at N = 8192 was
#: 16 blocks of threads on a 132-SM H100, 2.2 ms a block (~4 us a step of the run), now
#: 0.18 ms (``benchmarks/results/block_parts_h100x1_20261126T2106.txt``); a scan's 1000
#: members at N = 500 were one part (32 blocks of threads): 94.6 us a row on an H200
#: (``scan_trace_h200x1_20261201T0530.txt``), in 32-point parts (15) 18.2 us
#: (``scan_trace_h200x1_20261203T1459.txt``)
MEASURE_SPLIT_POINTS = 32
MEASURE_MAX_SPLITS = 32


def measure_splits(n: int) -> int:
    """The parts the 32-members-a-block kernel splits an N-point grid into."""
    return max(1, min(MEASURE_MAX_SPLITS, n // MEASURE_SPLIT_POINTS))
