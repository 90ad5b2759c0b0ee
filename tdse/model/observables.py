"""Observables of a state (atomic units; psi normalised as sum |psi|^2 dx = 1)."""
from __future__ import annotations

import numpy as np

from .absorber import absorber_profile
from .field import field_value
from .hamiltonian import Operator
from .potential import gradient, total


def norm(psi, dx):
    return float(np.sum(np.abs(psi) ** 2) * dx)


def x_mean(x, psi, dx):
    """<x> = sum x |psi|^2 dx / sum |psi|^2 dx."""
    w = np.abs(psi) ** 2
    return float(np.sum(x * w) / np.sum(w))


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
    kr = _kept_real(psi, eps)
    if kr is None:
        return 0
    r = kr[1][kr[0]]
    return int(np.count_nonzero(r[:-1] * r[1:] < 0))


class Measure:
    """Every observable of a state at time t (one row of /observables), with what does not
    change during a run built once: the grid, the lowest eigenstates ``phi0`` of H(0),
    psi(0) and the kinetic operator T (energies are <psi|T psi> + sum v |psi|^2 dx, never a
    rebuilt H)."""

    def __init__(self, config, x, phi0, psi0):
        self.config, self.x, self.phi0, self.psi0 = config, x, phi0, psi0
        self.kinetic = Operator(config, 1.0, np.zeros(config.grid.n), np)
        self.layers = absorber_profile(config, x) > 0     # the absorbing layers (or none)

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
        return {"t": t, "norm": nrm, "yield": 1.0 - nrm, "layer_norm": inside,
                "yield_flux": 1.0 - nrm + inside,
                "energy": self.energy(psi, total(cfg.potential, x, t)),
                "x_mean": x_mean(x, psi, dx), "p_mean": p_mean(psi, dx),
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

    NAMES = ("norm", "yield", "layer_norm", "yield_flux", "energy", "x_mean", "p_mean",
             "acceleration", "acceleration_normalised", "field", "autocorrelation",
             "populations_h0")

    def __init__(self, configs, x, phi0, psi0, xp=np):
        from .hamiltonian import BlockOperator
        from .potential import BatchPotential
        self.configs, self.xp = list(configs), xp
        self.dx = configs[0].grid.dx
        self.x = xp.asarray(x)
        B = len(self.configs)
        phi0 = np.asarray(phi0)                    # (B, K, N)
        # members sharing one molecule share their eigenstates: one GEMM for all populations
        # (a broadcast array shares them by its strides: no B K N comparisons)
        self.shared = phi0.shape[0] == 1 or phi0.strides[0] == 0 or bool(np.all(phi0 == phi0[:1]))
        self.phi0 = xp.asarray(phi0[0] if self.shared else phi0)
        # (N, B), or (N, 1): one psi(0) for every member, repeated where it lives -- a single
        # run's time block of 512 states at N = 8192 repeated it on the host (64 MB made and
        # uploaded at the run's start)
        psi0 = xp.asarray(psi0, dtype=np.complex128)
        if psi0.shape[1] == 1 and B > 1:
            psi0 = xp.broadcast_to(psi0, (psi0.shape[0], B))
        self.psi0 = xp.ascontiguousarray(psi0)
        self.potential = BatchPotential([c.potential for c in configs], x, xp)
        self.kinetic = BlockOperator(configs[0].grid, 1.0, xp.zeros((len(x), B)), xp)
        one = all(c is self.configs[0] for c in self.configs)       # one configuration, B times
        layers = np.stack([absorber_profile(c, np.asarray(x)) > 0
                           for c in (self.configs[:1] if one else self.configs)], axis=1)
        layers = np.ascontiguousarray(np.broadcast_to(layers, (len(x), B)))
        self.layers, self._any_layer = xp.asarray(layers), bool(layers.any())
        if xp is np:
            self.layers = layers.astype(np.float64)     # summed against |psi|^2 (einsum)
        self.k = xp.asarray(2 * np.pi * np.fft.fftfreq(len(x), d=self.dx))

    def __call__(self, t, X, host=True) -> dict:
        """The row at time t; ``host=False`` keeps it on the device (the caller copies).
        On a GPU the grid sums are one kernel (:meth:`raw`), finished on the host."""
        from mgemm.arrays import to_host
        if self.xp is not np:
            r = self.raw(t, X)
            if not host:        # finished on the device: one row, no copy
                cols = {k: self.xp.stack([r[k]]) for k in ("sums", "amps")}
                return {k: v[0] for k, v in self.finish([t], cols, self.xp).items()}
            return {k: v[0] for k, v in self.finish([t], stack_rows([r], self.xp)).items()}
        out = self._host_row(t, X)
        if host:
            out = {k: to_host(v) for k, v in out.items()}
        out["field"] = self.potential.field(t)
        return out

    @property
    def device(self) -> bool:
        """Whether :meth:`raw` applies (psi on a GPU)."""
        return self.xp is not np

    def raw(self, t, X, also=None, times=None) -> dict:
        """What the observables at t need, on the device, left unfinished so that a row is
        a few launches and no synchronisation (:meth:`finish` makes them on the host from
        the stacked rows): "sums" (9, B) = per member sum |psi|^2, the same in the
        absorbing layers, x |psi|^2, dV/dx |psi|^2, Re psi* H psi, Re and Im psi0* psi,
        sum k |F_k|^2 (F = FFT psi, Parseval's <p>), |psi|^2 within 10 points of a wall;
        "amps" the amplitudes phi0 psi (K x B, or B x K when the members' eigenstates
        differ); with ``also`` (M x N) "also" = also @ psi.  One kernel
        (:data:`MEASURE_KERNEL`) evaluates V and dV/dx from the uploaded parameters.
        ``times`` (B,): each member at its own time instead of all at t -- B states of one
        run at B times as one block (members that share a configuration)."""
        xp, pot = self.xp, self.potential
        if xp is np:
            return self._host_raw(t, X, also, times)
        from mgemm.arrays import PinnedUpload
        if getattr(self, "_up", None) is None:
            self._up = PinnedUpload(xp)
            mod = xp.RawModule(code=MEASURE_KERNEL)
            self._kern = mod.get_function("tdse_block_measure")
            self._split = mod.get_function("tdse_block_measure_split")
            self._xv = xp.ascontiguousarray(self.x.ravel())
            self._lay = xp.ascontiguousarray(self.layers)
        n, B = X.shape
        X = xp.ascontiguousarray(X, dtype=np.complex128)
        P = self._up(pot.pack([t], [1.0]) if times is None else self._pack_own(times))
        kin, k = self.kinetic._kinetic(X)
        if k != 1.0:
            kin = kin * k
        kin = xp.ascontiguousarray(kin)
        F = xp.ascontiguousarray(xp.fft.fft(X, axis=0))
        args = (X, kin, self.psi0, F, self.k, self._xv, self._lay, P, pot.constants(),
                np.int32(n), np.int32(B), np.int32(len(pot.Z)), np.int32(pot.has_field))
        if B <= SPLIT_MAX_MEMBERS or n >= 128 * B:
            G = max(1, min(64, -(-n // 256)))
            part = xp.empty((9, G, B))
            self._split((G, B), (256,), args + (part,))
            sums = part.sum(axis=1)
        else:
            G = measure_splits(n)
            part = xp.empty((9, G, B))
            self._kern(((B + 31) // 32, G), (32, 8), args + (part,))
            sums = part.sum(axis=1) if G > 1 else part[:, 0]
        return self._raw_out(sums, X, also, t)

    def _raw_out(self, sums, X, also, t) -> dict:
        """:meth:`raw`'s dict: the sums, the amplitudes phi0 psi, also @ psi, t."""
        xp = self.xp
        out = {"sums": sums,
               "amps": self.phi0 @ X if self.shared else xp.einsum("bkn,nb->bk", self.phi0, X)}
        if also is not None:
            out["also"] = also @ X
        out["t"] = t
        return out

    def _host_raw(self, t, X, also=None, times=None) -> dict:
        """:meth:`raw` with NumPy: the nine sums of :data:`MEASURE_KERNEL` as whole-block
        operations (a row costs a few array passes over the block instead of a dozen calls
        on its vector: the single run's rows on the CPU, :class:`tdse.run.rows.Observables`)."""
        at = t if times is None else np.asarray(times, dtype=np.float64)
        X = np.ascontiguousarray(X, dtype=np.complex128)
        n = X.shape[0]
        w = X.real ** 2 + X.imag ** 2
        kin, k = self.kinetic._kinetic(X)
        V, dV = self.potential.host_fields(at)
        # Re X* (k kin + V X) = k Re X* kin + V w, summed over the grid
        energy = np.einsum("nb,nb->b", X.real, kin.real) + np.einsum("nb,nb->b", X.imag, kin.imag)
        if k != 1.0:
            energy *= k
        energy += np.einsum("nb,nb->b", V, w)
        c0 = np.einsum("nb,nb->b", self.psi0.conj(), X)
        F = np.fft.fft(X, axis=0)
        layers = np.einsum("nb,nb->b", w, self.layers) if self._any_layer else np.zeros(X.shape[1])
        # the grid sums of a column by einsum, not a matrix-vector product: BLAS's gemv gives
        # the last M mod 4 columns other bits than the same state in another column, and a
        # row's bits must not depend on where in a block it is measured (a resumed run's
        # blocks, the observables' worker's: the same file, bit for bit)
        sums = np.stack([
            w.sum(axis=0), layers, np.einsum("n,nb->b", self.x.ravel(), w),
            np.einsum("nb,nb->b", w, dV), energy, c0.real, c0.imag,
            np.einsum("n,nb->b", self.k, F.real ** 2 + F.imag ** 2),
            w[:10].sum(axis=0) + w[max(10, n - 10):].sum(axis=0)])
        return self._raw_out(sums, X, also, t)

    def _pack_own(self, times):
        """:meth:`BatchPotential.pack`'s parameters with member b at ``times[b]`` (its own
        field and centres: O(B), where every member at every time was B^2)."""
        pot = self.potential
        E, X = pot.own(times)                                   # (B,), (B, C)
        per = np.concatenate([np.asarray(E, dtype=np.float64).reshape(-1, 1), X], axis=1)
        return np.concatenate([pot.header([1.0]), per.ravel()])

    def finish(self, ts, cols, xp=np) -> dict:
        """The observables (S, B[, K]) of S rows of :meth:`raw` stacked (``cols``: name ->
        (S, ...), on the host, or on the device with its ``xp``), at times ``ts``: the
        definitions of :meth:`_host_row`; E(t) from the parameters on the host."""
        S, dx, n = cols["sums"], self.dx, len(self.k)
        wsum = S[:, 0]
        nrm, inside, force = wsum * dx, S[:, 1] * dx, -S[:, 3]
        amps = cols["amps"]
        amps = xp.swapaxes(amps, 1, 2) if self.shared else amps          # (S, B, K)
        return {"norm": nrm, "yield": 1.0 - nrm, "layer_norm": inside,
                "yield_flux": 1.0 - nrm + inside, "energy": S[:, 4] / wsum,
                "x_mean": S[:, 2] / wsum, "p_mean": S[:, 7] / (n * wsum),
                "acceleration": force * dx, "acceleration_normalised": force / wsum,
                "autocorrelation": (S[:, 5] + 1j * S[:, 6]) * dx,
                "populations_h0": xp.abs(amps * dx) ** 2,
                "field": self.potential.field(np.asarray(ts, dtype=np.float64).reshape(-1, 1))}

    def _host_row(self, t, X):
        """The definitions, vectorised with NumPy (also the device kernel's reference)."""
        xp, dx, x = self.xp, self.dx, self.x
        w = xp.abs(X) ** 2
        wsum = w.sum(axis=0)
        nrm = wsum * dx
        HX = self.kinetic(X)
        HX += self.potential.total(t) * X
        dV = self.potential.gradient(t)
        F = xp.fft.fft(X, axis=0)      # <p> = sum_k k |F_k|^2 / N (Parseval), one FFT
        inside = (w * self.layers).sum(axis=0) * dx
        force = -(w * dV).sum(axis=0)
        out = {
            "norm": nrm, "yield": 1.0 - nrm, "layer_norm": inside, "yield_flux": 1.0 - nrm + inside,
            "energy": xp.real(xp.sum(X.conj() * HX, axis=0)) / wsum,
            "x_mean": (x[:, None] * w).sum(axis=0) / wsum,
            "p_mean": (self.k[:, None] * xp.abs(F) ** 2).sum(axis=0) / (len(self.k) * wsum),
            "acceleration": force * dx, "acceleration_normalised": force / wsum,
            "autocorrelation": xp.sum(self.psi0.conj() * X, axis=0) * dx,
            "populations_h0": xp.abs((self.phi0 @ X).T * dx) ** 2 if self.shared else
            xp.abs(xp.einsum("bkn,nb->bk", self.phi0, X) * dx) ** 2,
        }
        return out


def stack_rows(rows, xp):
    """Rows (dicts of arrays of one shape per key, on the device of ``xp`` or the host) to
    the host as one array per key: one stack and one copy per key."""
    from mgemm.arrays import to_host
    cols = {}
    for name in rows[0]:
        first = rows[0][name]
        if xp is np or np.isscalar(first) or isinstance(first, np.ndarray):
            cols[name] = np.stack([np.asarray(r[name]) for r in rows])
        else:
            cols[name] = to_host(xp.stack([r[name] for r in rows]))
    return cols


#: per member b (a block of 32 members x 8 row-strides): the grid sums of BlockMeasure.raw,
#: with V and dV/dx from the parameters of BatchPotential.pack (one time) in the order of
#: potential.total / gradient.
MEASURE_KERNEL = r"""
#include <cupy/complex.cuh>
// the nine sums of one grid point i of member b (BlockMeasure.raw's "sums")
__device__ __forceinline__ void tdse_point(
        double* s, int i, int b, const complex<double>* X, const complex<double>* KX,
        const complex<double>* psi0, const complex<double>* F, const double* k,
        const double* x, const bool* layers, const double* P, const double* Q,
        int n, int nb, int nc, int field) {
    double a = Q[b];
    int q = 4 + b * (1 + nc);
    double E = field ? P[q] : 0.0;
    int at = i * nb + b;
    complex<double> z = X[at];
    double w = z.real() * z.real() + z.imag() * z.imag();
    double xi = x[i];
    double v = 0.0, g = 0.0;
    if (field) g += E;
    for (int c = 0; c < nc; ++c) {
        double r = xi - P[q + 1 + c];
        double Z = Q[nb + b * nc + c];
        v -= Z / sqrt(r * r + a);
        g += Z * r / pow(r * r + a, 1.5);
    }
    if (field) v += E * xi;
    complex<double> hz = KX[at] + v * z;
    complex<double> c0 = conj(psi0[at]) * z;
    complex<double> f = F[at];
    s[0] += w;
    if (layers[at]) s[1] += w;
    s[2] += xi * w;
    s[3] += w * g;
    s[4] += (conj(z) * hz).real();
    s[5] += c0.real();
    s[6] += c0.imag();
    s[7] += k[i] * (f.real() * f.real() + f.imag() * f.imag());
    if (i < 10 || i >= n - 10) s[8] += w;
}

// many members: 32 members a block, 8 threads along the grid each; the grid split over
// gridDim.y blocks, each block's partial sums to part[(j * gridDim.y + blockIdx.y) * nb + b],
// summed over them by one reduction after (deterministic: no atomics)
extern "C" __global__ void tdse_block_measure(
        const complex<double>* X, const complex<double>* KX, const complex<double>* psi0,
        const complex<double>* F, const double* k, const double* x, const bool* layers,
        const double* P, const double* Q, int n, int nb, int nc, int field, double* part) {
    __shared__ double sh[9][8][33];
    int tx = threadIdx.x, ty = threadIdx.y, g = blockIdx.y, G = gridDim.y;
    int b = blockIdx.x * 32 + tx;
    double s[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    if (b < nb) {
        for (int i = g * 8 + ty; i < n; i += 8 * G)
            tdse_point(s, i, b, X, KX, psi0, F, k, x, layers, P, Q, n, nb, nc, field);
    }
    for (int j = 0; j < 9; ++j) sh[j][ty][tx] = s[j];
    __syncthreads();
    if (ty == 0 && b < nb) {
        for (int j = 0; j < 9; ++j) {
            double t = 0.0;
            for (int y = 0; y < 8; ++y) t += sh[j][y][tx];
            part[(j * G + g) * nb + b] = t;
        }
    }
}

// few members (a single run): the grid split over gridDim.x blocks of 256 threads, member
// blockIdx.y; each block's partial sums to part[(j * gridDim.x + block) * nb + b], summed
// over the blocks by one reduction after (deterministic: no atomics)
extern "C" __global__ void tdse_block_measure_split(
        const complex<double>* X, const complex<double>* KX, const complex<double>* psi0,
        const complex<double>* F, const double* k, const double* x, const bool* layers,
        const double* P, const double* Q, int n, int nb, int nc, int field, double* part) {
    __shared__ double sh[9][256];
    int t = threadIdx.x, g = blockIdx.x, G = gridDim.x, b = blockIdx.y;
    double s[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int i = g * 256 + t; i < n; i += G * 256)
        tdse_point(s, i, b, X, KX, psi0, F, k, x, layers, P, Q, n, nb, nc, field);
    for (int j = 0; j < 9; ++j) sh[j][t] = s[j];
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h)
            for (int j = 0; j < 9; ++j) sh[j][t] += sh[j][t + h];
        __syncthreads();
    }
    if (t == 0)
        for (int j = 0; j < 9; ++j) part[(j * G + g) * nb + b] = sh[j][0];
}
"""

#: up to this many members (or while N >= 128 B) :meth:`BlockMeasure.raw` splits the grid
#: over blocks (a single run's sums in parallel over N); beyond, a block holds 32 members
#: (8 threads along N each: at B = 1 that kernel took ~0.5 ms at N = 8192 on an H200,
#: twice the step)
SPLIT_MAX_MEMBERS = 16

#: ... and beyond, the grid split in MEASURE_SPLIT_POINTS-point parts (at most
#: MEASURE_MAX_SPLITS; a function of N alone, so a member's sums never depend on how many
#: members share its block): a single run's time block of 512 states at N = 8192 was
#: 16 blocks of threads on a 132-SM H100, 2.2 ms a block (~4 us a step of the run), now
#: 0.18 ms (``benchmarks/results/block_parts_h100x1_20261126T2106.txt``)
MEASURE_SPLIT_POINTS = 256
MEASURE_MAX_SPLITS = 32


def measure_splits(n: int) -> int:
    """The parts the 32-members-a-block kernel splits an N-point grid into."""
    return max(1, min(MEASURE_MAX_SPLITS, n // MEASURE_SPLIT_POINTS))
