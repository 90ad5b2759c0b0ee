"""V(x, t) and dV/dx of a batch of members on a GPU, generated from the potential's
definition, its ``device`` tuple (:mod:`tdse.model.potential`, :mod:`tdse.model.formula`):

* ("centres", term, force): one centre's term and force as :class:`tdse.expression.Expr` in
  r = x - X_c(t), the charge Z and the softening a (the soft-core molecule):
  V = -sum_c term(r_c, Z_c, a) [+ x E(t)], dV/dx = sum_c force(r_c, Z_c, a) [+ E(t)], in the
  order of operations of the host's ``potential.total`` and ``potential.gradient``;
* ("formula", V, dV, names): V(x, t) and its derivative in x, t and the parameters ``names``.

The parameters are those of :meth:`tdse.model.potential.BatchPotential.pack` (``P``: a
header [alpha, shift, alpha*scale, w_1..w_nt], then per time and member [E, then ``nc``
slots]: the centres' X_c(t), or t for a formula) and ``constants`` (``Q``: [a_b, then Z_bc]
for centres; the parameters' values k-major, Q[k nb + b], for a formula)."""
from __future__ import annotations

from .codegen import c_source


def _centres_v(term, x):
    return f"""double a = Q[b];
    for (int c = 0; c < nc; ++c) {{
        double r = {x} - P[q + 1 + c];
        double Z = Q[nb + b * nc + c];
        v -= {c_source(term)};
    }}"""


def _centres_g(force, x):
    return f"""double a = Q[b];
    for (int c = 0; c < nc; ++c) {{
        double r = {x} - P[q + 1 + c];
        double Z = Q[nb + b * nc + c];
        g += {c_source(force)};
    }}"""


def _centres_vg(term, force, x):
    return f"""double a = Q[b];
    for (int c = 0; c < nc; ++c) {{
        double r = {x} - P[q + 1 + c];
        double Z = Q[nb + b * nc + c];
        v -= {c_source(term)};
        g += {c_source(force)};
    }}"""


def _symbols(names, x):
    """A formula's names in C: x, t (the slot after E), each parameter p_<name>."""
    return {"x": x, "t": "tt", **{k: f"p_{k}" for k in names}}


def _reads(names):
    return "".join(f"        const double p_{k} = Q[{j} * nb + b];\n" for j, k in enumerate(names))


def _formula(exprs, names, x):
    """Statements evaluating a formula's ``exprs`` [(target, op, Expr)] at ``x``."""
    sym = _symbols(names, x)
    body = "".join(f"        {target} {op} {c_source(e, sym)};\n" for target, op, e in exprs)
    return "{\n        const double tt = P[q + 1];\n" + _reads(names) + body + "    }"


def molecule_v(device, x="x") -> str:
    """C statements adding the molecule's V at ``x`` to ``v`` (member ``b``, slots at ``q``)."""
    if device[0] == "centres":
        return _centres_v(device[1], x)
    return _formula([("v", "+=", device[1])], device[3], x)


def molecule_g(device, x="x") -> str:
    """C statements adding the molecule's dV/dx at ``x`` to ``g``."""
    if device[0] == "centres":
        return _centres_g(device[2], x)
    return _formula([("g", "+=", device[2])], device[3], x)


def molecule_vg(device, x) -> str:
    """Both, in one pass (the measuring kernel)."""
    if device[0] == "centres":
        return _centres_vg(device[1], device[2], x)
    return _formula([("v", "+=", device[1]), ("g", "+=", device[2])], device[3], x)


def device_v(device) -> str:
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
    MOLECULE
    if (field) v += P[q] * x;
    s += w * v;
}
d = P[hdr] * (s - P[hdr + 1]);
""".replace("MOLECULE", molecule_v(device))


def device_dv(device) -> str:
    """dV/dx at one time (the host's order: the field, then each centre's force)."""
    return r"""
int b = i % nb;
int q = base + b * (1 + nc);
double g = 0.0;
if (field) g += P[q];
MOLECULE
d = g;
""".replace("MOLECULE", molecule_g(device))


_KERNELS = {}


def potential_kernels(cp, device) -> dict:
    """{"v": :func:`device_v`, "dv": :func:`device_dv`} as CuPy element-wise kernels, compiled
    once a definition."""
    key = str(device)
    if key not in _KERNELS:
        sig = ("float64 x, raw float64 P, raw float64 Q, int32 hdr, int32 base, int32 nt, "
               "int32 nc, int32 nb, int32 field", "float64 d")
        _KERNELS[key] = {"v": cp.ElementwiseKernel(*sig, device_v(device), "tdse_batch_v"),
                         "dv": cp.ElementwiseKernel(*sig, device_dv(device), "tdse_batch_dv")}
    return _KERNELS[key]
