"""V(x, t) and dV/dx of a batch of members on a GPU, generated from a centre potential's
definition (:class:`tdse.model.potential.SoftCore`: one centre's ``term`` and ``force`` as
:class:`tdse.expression.Expr` in r = x - X_c(t), the charge Z and the softening a):

    V     = -sum_c term(r_c, Z_c, a) [+ x E(t)],
    dV/dx =  sum_c force(r_c, Z_c, a) [+ E(t)],

in the order of operations of the host's ``potential.total`` and ``potential.gradient``.  The
parameters are those of :meth:`tdse.model.potential.BatchPotential.pack` (``P``: a header
[alpha, shift, alpha*scale, w_1..w_nt], then per time and member [E, X_1..X_nc]) and
:meth:`~tdse.model.potential.BatchPotential.constants` (``Q``: [a_b, then Z_bc])."""
from __future__ import annotations

from .codegen import c_source



def device_v(term) -> str:
    """sum_t w_t V(x_i, t) of member b, scaled alpha (V - shift): the body of an element-wise
    kernel (``i``, ``x``, ``P``, ``Q``, ``hdr``, ``base``, ``nt``, ``nc``, ``nb``, ``field``
    in scope; writes ``d``)."""
    return r"""
int b = i % nb;
double s = 0.0;
for (int t = 0; t < nt; ++t) {
    double w = P[hdr + 3 + t];
    if (w == 0.0) continue;
    int q = base + (t * nb + b) * (1 + nc);
    double v = 0.0;
    double a = Q[b];
    for (int c = 0; c < nc; ++c) {
        double r = x - P[q + 1 + c];
        double Z = Q[nb + b * nc + c];
        v -= TERM;
    }
    if (field) v += P[q] * x;
    s += w * v;
}
d = P[hdr] * (s - P[hdr + 1]);
""".replace("TERM", c_source(term))


def device_dv(force) -> str:
    """dV/dx at one time (the host's order: the field, then each centre's force)."""
    return r"""
int b = i % nb;
int q = base + b * (1 + nc);
double g = 0.0;
if (field) g += P[q];
double a = Q[b];
for (int c = 0; c < nc; ++c) {
    double r = x - P[q + 1 + c];
    double Z = Q[nb + b * nc + c];
    g += FORCE;
}
d = g;
""".replace("FORCE", c_source(force))


_KERNELS = {}


def potential_kernels(cp, term, force) -> dict:
    """{"v": :func:`device_v`, "dv": :func:`device_dv`} as CuPy element-wise kernels, compiled
    once a definition."""
    key = (str(term), str(force))
    if key not in _KERNELS:
        sig = ("float64 x, raw float64 P, raw float64 Q, int32 hdr, int32 base, int32 nt, "
               "int32 nc, int32 nb, int32 field", "float64 d")
        _KERNELS[key] = {"v": cp.ElementwiseKernel(*sig, device_v(term), "tdse_batch_v"),
                         "dv": cp.ElementwiseKernel(*sig, device_dv(force), "tdse_batch_dv")}
    return _KERNELS[key]
