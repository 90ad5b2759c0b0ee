"""The 1D + 1D H2+ model with quantum nuclei (``[nuclei]``; atomic units, hbar = m_e = e = 1).

psi(x, R) lives on the grid x_i of ``[grid]`` times R_j = R_min + j dR of ``[nuclei]``, as an
N_x x N_R array, normalised as sum |psi|^2 dx dR = 1.  x is the electron's coordinate from
the nuclei's centre of mass, R the internuclear distance (the collinear model of Kulander,
Mies & Schafer, PRA 53, 2562 (1996); Feuerstein & Thumm, PRA 67, 043405 (2003), eq. (1)):

    H = -1/(2 mu_N) d^2/dR^2 - 1/(2 mu_e) d^2/dx^2 + V(x, R) + kappa x E(t),
    V = -1/sqrt((x - R/2)^2 + a) - 1/sqrt((x + R/2)^2 + a) + 1/sqrt(R^2 + b),
    mu_N = M/2,   mu_e = 2M/(2M + 1),   kappa = (2M + 2)/(2M + 1),

M the nuclei's mass (``nuclei.mass``, m_e), a = ``potential.a`` (the thesis' soft-core form,
eq. 10, one term a nucleus), b = ``nuclei.repulsion_a`` (0: the exact 1/R).  kappa x E is the
length-gauge coupling of the internal motion: the dipole -x_e + X_1 + X_2 is
X_cm - kappa x, and the centre of mass (charge +1) separates (docs/NUCLEI.md).

Each kinetic energy is the grid's own (``grid.stencil`` for x and R: 3-, 5-point or the
sinc-DVR of :mod:`tdse.model.hamiltonian`, divided by the mass), as a dense matrix, so

    H Psi = T_x Psi + Psi T_R + (V + kappa E(t) x) o Psi,

two GEMMs (T_x's one real GEMM on Psi's real and imaginary parts side by side), written
once against the array module (NumPy or CuPy).  Its spectrum lies in
[min V + min(kappa E x), max V + T_x,max + T_R,max + max(kappa E x)] (T >= 0, Weyl), the
interval the Chebyshev series needs (:mod:`tdse.numerics.chebyshev`).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse.linalg

from ..config import ConfigError, Grid
from .absorber import absorber_profile, layer
from .field import dipole_field
from .grid import points
from .hamiltonian import kinetic_dense, kinetic_max
from .potential import coulomb, coulomb_force

__all__ = ["masses", "r_grid", "potential", "Model", "born_oppenheimer", "vibrational",
           "eigenstates", "initial_state", "ker_spectrum", "dissociation_limit", "check_box", "not_for",
           "H2_OMEGA", "H2_R0", "HARTREE_EV"]

#: H2's ground-state vibration (omega_e = 4401.21 cm^-1) and bond length (0.7414 A), Huber &
#: Herzberg, Constants of Diatomic Molecules (1979), in hartree and bohr (CODATA 2018)
H2_OMEGA = 4401.21 / 219474.6313632
H2_R0 = 0.74144 / 0.529177210903
#: one hartree in eV (CODATA 2018)
HARTREE_EV = 27.211386245988


def masses(M: float):
    """(mu_e, mu_N, kappa) of nuclei of mass ``M`` (m_e): the module docstring's formulas."""
    return 2.0 * M / (2.0 * M + 1.0), 0.5 * M, (2.0 * M + 2.0) / (2.0 * M + 1.0)


def r_grid(config) -> Grid:
    """R's grid as a :class:`Grid` (the x grid's stencil)."""
    nu = config.nuclei
    return Grid(nu.R_min, nu.R_max, nu.dR, config.grid.stencil)


def potential(a: float, b: float, x, R, xp=np):
    """V(x, R) on the grid (N_x x N_R): the two soft-core terms at +-R/2
    (:func:`tdse.model.potential.coulomb`) and the nuclei's repulsion."""
    X, RR = x[:, None], R[None, :]
    return -coulomb(1.0, 0.5 * RR, a, X, xp) - coulomb(1.0, -0.5 * RR, a, X, xp) + 1.0 / xp.sqrt(RR * RR + b)


def _r_absorber(config, R):
    """W(R) >= 0 in R's last ``absorber_width`` bohr (large R only: at small R the
    repulsion is the wall), quadratic as [absorber]'s (:func:`absorber_profile`)."""
    nu = config.nuclei
    if not nu.absorber_width:
        return np.zeros_like(R)
    return layer(R - (nu.R_max - nu.dR - nu.absorber_width), nu.absorber_width, nu.absorber_strength)


class Model:
    """The model of ``config`` on the device of ``xp``: grids, masses, V, the kinetic
    matrices, the absorbers and the regions the fractions count (module docstring)."""

    def __init__(self, config, xp=np):
        if config.nuclei is None:
            raise ValueError("the config has no [nuclei] section")
        nu, g = config.nuclei, config.grid
        self.config, self.xp = config, xp
        self.mu_e, self.mu_N, self.kappa = masses(nu.mass)
        self.grid_x, self.grid_R = g, r_grid(config)
        self.x, self.R = points(g), points(self.grid_R)
        self.shape = (g.n, nu.n)
        self.dA = g.dx * nu.dR
        self.V_host = potential(config.potential.a, nu.repulsion_a, self.x, self.R)
        self.Tx_host = kinetic_dense(g) / self.mu_e
        self.TR_host = kinetic_dense(self.grid_R) / self.mu_N
        self.t_max = kinetic_max(g.stencil, g.dx) / self.mu_e + kinetic_max(g.stencil, nu.dR) / self.mu_N
        self.v_range = (float(self.V_host.min()), float(self.V_host.max()))
        self.Tx = xp.asarray(self.Tx_host)
        self.TR = xp.asarray(self.TR_host.astype(np.complex128))
        self.V = xp.asarray(self.V_host)
        self.kx = xp.asarray(self.kappa * self.x)[:, None]
        self.x_dev, self.R_dev = xp.asarray(self.x)[:, None], xp.asarray(self.R)[None, :]
        Wx = absorber_profile(config, self.x) if config.absorber is not None else np.zeros_like(self.x)
        WR = _r_absorber(config, self.R)
        W = Wx[:, None] + WR[None, :]
        self.W = xp.asarray(W) if W.any() else None
        #: the share of each point's absorption that is the x absorber's (the rest is R's)
        self.x_share = xp.asarray(np.divide(np.broadcast_to(Wx[:, None], W.shape), W, out=np.zeros_like(W),
                                            where=W > 0))
        X, RR = self.x[:, None], self.R[None, :]
        near = np.minimum(np.abs(X - 0.5 * RR), np.abs(X + 0.5 * RR)) < nu.bound_radius
        far = RR >= nu.dissociated_R
        self.regions = {"bound": xp.asarray(near & ~far, dtype=np.float64),
                        "dissociated": xp.asarray(near & far, dtype=np.float64),
                        "ionised": xp.asarray(~near, dtype=np.float64)}
        #: dV/dx (the electron's force, for the dipole acceleration)
        self.dVdx = xp.asarray(coulomb_force(1.0, 0.5 * RR, config.potential.a, X)
                               + coulomb_force(1.0, -0.5 * RR, config.potential.a, X))

    def field(self, t) -> float:
        """E(t) of the length gauge's kappa x E(t) (0 without a field)."""
        return float(dipole_field(self.config.potential.field, t))

    def apply(self, Y, scale=1.0, e=0.0):
        """scale (T + V) Y + e kappa x o Y for Y an N_x x N_R complex block (C order), or a
        B x N_x x N_R stack of them (a scan's members) with ``e`` one field value each."""
        xp = self.xp
        Y = xp.ascontiguousarray(Y, dtype=np.complex128)
        out = (self.Tx @ Y.view(np.float64)).view(np.complex128)    # T_x on Re, Im at once
        out += Y @ self.TR
        out += self.V * Y
        if scale != 1.0:
            out *= scale
        if np.ndim(e):
            out += xp.asarray(e)[:, None, None] * self.kx * Y
        elif e:
            out += e * self.kx * Y
        return out

    def bounds(self, scale=1.0, e=0.0):
        """[lo, hi] holding the spectrum of scale (T + V) + e kappa x (module docstring); for
        several members' e, of every one of them."""
        ends = np.outer(np.atleast_1d(e), self.kappa * self.x[[0, -1]])
        vlo, vhi = self.v_range
        return scale * vlo + float(ends.min(initial=0.0)), scale * (vhi + self.t_max) + float(ends.max(initial=0.0))

    def measure(self, Y, t, absorbed=(0.0, 0.0), E=None) -> dict:
        """The observables of Y at time t (host floats and arrays): norm; <H(t)>, <x> and <R>,
        each divided by the norm; the electron's dipole acceleration -<psi|dV/dx + kappa E|psi>
        / mu_e, not divided (the emitted dipole, as the 1D run's ``acceleration``); the
        fractions of the initial norm by region (``bound``, ``dissociated``, ``ionised``) and
        taken by the absorbers (``absorbed``: x's, R's); the nuclear and
        electronic densities int |psi|^2 dx and int |psi|^2 dR.  ``E``: the field at t (default
        the model's own; a scan's member its own)."""
        xp, dA = self.xp, self.dA
        rho = Y.real ** 2 + Y.imag ** 2
        norm = float(rho.sum()) * dA
        E = self.field(t) if E is None else E
        HY = self.apply(Y, 1.0, E)
        d = max(norm, 1e-300)
        out = {"norm": norm,
               "energy": float(xp.vdot(Y, HY).real) * dA / d,
               "x_mean": float((rho * self.x_dev).sum()) * dA / d,
               "R_mean": float((rho * self.R_dev).sum()) * dA / d,
               "acceleration": -(float((rho * self.dVdx).sum()) * dA + self.kappa * E * norm) / self.mu_e}
        for k, m in self.regions.items():
            out[k] = float((rho * m).sum()) * dA
        out["absorbed_x"], out["absorbed_R"] = float(absorbed[0]), float(absorbed[1])
        out["nuclear_density"] = _host(xp, rho.sum(axis=0) * self.grid_x.dx)
        out["electron_density"] = _host(xp, rho.sum(axis=1) * self.config.nuclei.dR)
        return out


def _host(xp, a):
    return a if xp is np else xp.asnumpy(a)


def born_oppenheimer(model: Model, count=1, electron_mass=None):
    """The electronic states at each fixed R_j: E_n(R_j) (N_R x count, the repulsion
    included) and phi_n(x; R_j) (N_x x N_R x count, sum phi^2 dx = 1, the ground state
    positive, each n's sign kept smooth in R), from T_x + V(x, R_j) with the electron's
    mass ``electron_mass`` (default the model's mu_e)."""
    Tx = model.Tx_host * (model.mu_e / electron_mass if electron_mass else 1.0)
    n_x, n_R = model.shape
    E, phi = np.empty((n_R, count)), np.empty((n_x, n_R, count))
    for j in range(n_R):
        w, v = scipy.linalg.eigh(Tx + np.diag(model.V_host[:, j]), subset_by_index=[0, count - 1])
        E[j], phi[:, j] = w, v / math.sqrt(model.grid_x.dx)
    for n in range(count):
        f = phi[:, :, n]
        s = np.sign(f.sum(axis=0) if n % 2 == 0 else (f * model.x[:, None]).sum(axis=0))
        f *= np.where(s == 0, 1.0, s)[None, :]
    return E, phi


def vibrational(model: Model, curve, count=1):
    """The levels and states chi_v(R) (N_R x count, sum chi^2 dR = 1) of T_R + curve(R):
    the nuclei's motion on one Born-Oppenheimer curve."""
    w, v = scipy.linalg.eigh(model.TR_host + np.diag(curve), subset_by_index=[0, count - 1])
    return w, v / math.sqrt(model.grid_R.dx)


def _preconditioner(model, shift):
    """(T_x + T_R + shift)^-1 by the eigenvectors of T_x and T_R (four GEMMs a block): the
    kinetic energy, which spreads H's spectrum, inverted exactly."""
    lx, Qx = np.linalg.eigh(model.Tx_host)
    lr, Qr = np.linalg.eigh(model.TR_host)
    inv = 1.0 / (lx[:, None] + lr[None, :] + shift)
    n_x, n_R = model.shape

    def apply(X):
        X = np.asarray(X).reshape(n_x, n_R, -1)
        out = np.empty_like(X)
        for k in range(X.shape[2]):
            out[:, :, k] = Qx @ ((Qx.T @ X[:, :, k] @ Qr) * inv) @ Qr.T
        return out.reshape(n_x * n_R, -1)
    return apply


def eigenstates(model: Model, count=1, tol=1e-8, maxiter=400):
    """The lowest ``count`` eigenpairs of the model's H without a field: energies and
    states (N_x x N_R x count, sum psi^2 dx dR = 1), by LOBPCG (Knyazev 2001) started from
    the Born-Oppenheimer products phi_0(x; R) chi_v(R) and preconditioned by the inverse
    kinetic energy; raises RuntimeError when a residual ||H psi - E psi|| stays above
    ``tol`` (in hartree, psi normalised)."""
    n_x, n_R = model.shape
    k = count + 2                               # two guard vectors: the last pairs converge slower
    E_bo, phi = born_oppenheimer(model, 1)
    _, chi = vibrational(model, E_bo[:, 0], k)
    X0 = (phi[:, :, 0][:, :, None] * chi[None, :, :]).reshape(n_x * n_R, k)
    Tx, TR, V = model.Tx_host, model.TR_host, model.V_host

    def matmat(X):
        Y = np.asarray(X).reshape(n_x, n_R, -1)
        out = np.einsum("ij,jrk->irk", Tx, Y) + np.einsum("irk,rs->isk", Y, TR) + V[:, :, None] * Y
        return out.reshape(n_x * n_R, -1)
    N = n_x * n_R
    A = scipy.sparse.linalg.LinearOperator((N, N), matvec=matmat, matmat=matmat, dtype=np.float64)
    M = scipy.sparse.linalg.LinearOperator((N, N), matvec=(pre := _preconditioner(model, 1.0 - model.v_range[0])),
                                           matmat=pre, dtype=np.float64)
    with warnings.catch_warnings():     # (LOBPCG's own note where it misses tol / 10: the
        warnings.simplefilter("ignore", UserWarning)     # check below is against tol)
        w, v = scipy.sparse.linalg.lobpcg(A, X0, M=M, tol=tol * 0.1, maxiter=maxiter, largest=False)
    order = np.argsort(w)[:count]
    w, v = w[order], v[:, order]
    v /= np.sqrt((v * v).sum(axis=0) * model.dA)[None, :]
    res = np.linalg.norm(matmat(v) - v * w[None, :], axis=0) * math.sqrt(model.dA)
    if (res > tol).any():
        raise RuntimeError(f"the model's eigenstates did not converge: residuals {res.max():.2e} "
                           f"> {tol:g} hartree after {maxiter} LOBPCG iterations")
    return w, v.reshape(n_x, n_R, count)


def dissociation_limit(model: Model) -> float:
    """E(p + H): the electron (mass mu_e) on one nucleus, R -> infinity (the repulsion gone)."""
    x = model.x
    return float(scipy.linalg.eigh(model.Tx_host - np.diag(1.0 / np.sqrt(x * x + model.config.potential.a)),
                                   subset_by_index=[0, 0], eigvals_only=True)[0])


def initial_state(model: Model):
    """psi(0) of ``nuclei.state``: the model's v-th eigenstate (:func:`eigenstates`), or
    "franck_condon": H2's v = 0 packet |chi|^2 ~ exp(-mu_H2 omega_e (R - R_e)^2)
    (:data:`H2_OMEGA`, :data:`H2_R0`; H2's reduced mass M/2 too) on the ion's electronic
    ground state phi_0(x; R) (vertical ionisation)."""
    state = model.config.nuclei.state
    if state == "franck_condon":
        _, phi = born_oppenheimer(model, 1)
        chi = np.exp(-0.5 * model.mu_N * H2_OMEGA * (model.R - H2_R0) ** 2)
        psi = phi[:, :, 0] * chi[None, :]
    else:
        psi = eigenstates(model, state + 1)[1][:, :, state]
    psi = psi.astype(np.complex128)
    return psi / math.sqrt(float((abs(psi) ** 2).sum()) * model.dA)


def ker_spectrum(model: Model, psi, points=2001, pad=8):
    """The kinetic-energy-release spectrum of the dissociating part of ``psi`` (its
    ``dissociated`` region: R >= dissociated_R, the electron on a nucleus), by projecting
    on outgoing plane waves in R: Phi(x, k) = sum_R psi e^(-ikR) dR / sqrt(2 pi) (an FFT
    padded ``pad``-fold), P(k) = sum_x |Phi|^2 dx, KER = k^2 / (2 mu_N), P(KER) = P(k) mu_N / k
    on k > 0.  Holds when that part has left the potential's range (the p + H curve is flat
    there up to its -alpha/(2R^4) polarisation).  Returns energies (hartree and eV), P (per
    hartree), its integral and the part at k <= 0 (incoming: small when the packet is
    outgoing)."""
    psi = np.asarray(_host(model.xp, psi) if not isinstance(psi, np.ndarray) else psi)
    mask = _host(model.xp, model.regions["dissociated"])
    n_R, dR = model.shape[1], model.grid_R.dx
    n = 1 << int(math.ceil(math.log2(pad * n_R)))
    Phi = np.fft.fft(psi * mask, n=n, axis=1) * dR / math.sqrt(2 * math.pi)
    Pk = (abs(Phi) ** 2).sum(axis=0) * model.grid_x.dx
    k = 2 * math.pi * np.fft.fftfreq(n, dR)
    dk = 2 * math.pi / (n * dR)
    out_k, incoming = k > 0, float(Pk[k <= 0].sum() * dk)
    kk, P = k[out_k], Pk[out_k]
    order = np.argsort(kk)
    kk, P = kk[order], P[order]
    E = kk ** 2 / (2 * model.mu_N)
    grid = np.linspace(0.0, min(E[-1], 0.2), points)         # KER up to 0.2 hartree (5.4 eV)
    PE = np.interp(grid, E, P * model.mu_N / kk)
    return {"energy": grid, "energy_eV": grid * HARTREE_EV, "probability": PE,
            "total": float(P.sum() * dk), "incoming": incoming}


def not_for(config, what: str):
    """ConfigError (one line) for a ``[nuclei]`` config in a study made for the 1D model."""
    if config.nuclei is not None:
        raise ConfigError("nuclei", "[nuclei]", f"{what} is for the 1D model; a [nuclei] input runs by "
                          "`tdse run` (its convergence: python -m benchmarks nuclei --converge, docs/NUCLEI.md)")


def check_box(config):
    """ConfigError when the x box cannot hold a bound electron at the largest R before its
    absorber (it would be counted as ionised)."""
    nu, g = config.nuclei, config.grid
    w = config.absorber.width if config.absorber is not None else 0.0
    need = 0.5 * nu.R_max + nu.bound_radius + w
    if g.x_max < need or -g.x_min < need:
        raise ConfigError("grid.x_max", g.x_max, f"must be >= R_max/2 + bound_radius + the absorber's "
                          f"width = {need:g} bohr (and x_min <= -{need:g}): an electron on a nucleus at "
                          f"R_max must lie inside the box, out of the absorber")
