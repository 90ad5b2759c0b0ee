"""The whitelisted expressions (tdse.expression) and the C printed from them
(tdse.backends.cupy.codegen): parsed, never eval'ed; evaluated against NumPy written out by
hand; derivatives against central differences; the soft-core definition against the host's
hand-written formulas; the C against a C-like re-parse (Python's grammar groups C's
operators the same way)."""
from __future__ import annotations

import numpy as np
import pytest

from tdse.backends.cupy.codegen import c_source
from tdse.errors import ConfigError
from tdse.expression import FUNCTIONS, derivative, evaluate, parse

rng = np.random.default_rng()


@pytest.mark.parametrize("text, reason", [
    ("__import__('os').system('true')", "unknown function"),
    ("x.real", "not allowed"),
    ("x[0]", "not allowed"),
    ("x if t else 1", "not allowed"),
    ("x < 1", "not allowed"),
    ("lambda: 1", "not allowed"),
    ("y + 1", "unknown name 'y'"),
    ("open(x)", "unknown function"),
    ("sqrt(x, 2)", "takes one argument"),
    ("sqrt(x=1)", "takes one argument"),
    ("'1'", "not allowed"),
    ("True + x", "not allowed"),
    ("x +", "is not a formula"),
    ("", "must be a formula"),
])
def test_refuses_what_is_not_arithmetic(text, reason):
    with pytest.raises(ConfigError) as e:
        parse(text, ("x", "t"), "potential.V")
    msg = str(e.value)
    assert msg.startswith("potential.V = ") and reason in msg and "\n" not in msg


def test_a_formula_nested_too_deeply_is_one_line():
    for text in ["+".join(["x"] * 20000), "(" * 500 + "x" + ")" * 500]:
        with pytest.raises(ConfigError) as e:
            parse(text, ("x",), "potential.V")
        assert str(e.value).startswith("potential.V = ") and "\n" not in str(e.value)


def test_evaluates_as_numpy_does():
    x, t = rng.uniform(-3, 3, 50), rng.uniform(0, 2)
    cases = {
        "-1 / sqrt(x**2 + 2) + 0.1 * x * sin(0.5 * t)": -1 / np.sqrt(x ** 2 + 2) + 0.1 * x * np.sin(0.5 * t),
        "exp(-x * x / 2) * cos(pi * t) - tanh(x) ** 3": np.exp(-x * x / 2) * np.cos(np.pi * t) - np.tanh(x) ** 3,
        "abs(x) - (x - (t - 1)) / 3 + -x": np.abs(x) - (x - (t - 1)) / 3 + -x,
        "atan(x) + log(1 + x * x) + cosh(x) - sinh(x) + tan(x / 4)":
            np.arctan(x) + np.log(1 + x * x) + np.cosh(x) - np.sinh(x) + np.tan(x / 4),
        "2 ** x + +t": 2 ** x + t,
    }
    for text, want in cases.items():
        got = evaluate(parse(text, ("x", "t")), {"x": x, "t": t})
        np.testing.assert_array_equal(got, want, err_msg=text)    # the same operations
    from scipy.special import erf
    np.testing.assert_array_equal(evaluate(parse("erf(x)", "x"), {"x": x}), erf(x))


@pytest.mark.parametrize("text", [
    "-1 / sqrt(x**2 + 2)", "exp(-x * x / 2) * cos(3 * x)", "x ** 3 - 2 * x", "log(2 + sin(x))",
    "tanh(x) / (1 + x * x)", "abs(x) ** 1.5", "atan(x) * cosh(x / 3) - sinh(x / 4)",
    "erf(x) * tan(x / 5)", "(2 + x * x) ** (0.5 + 0 * x)", "(1 + x * x) ** (x / 7)"])
def test_derivative_matches_central_differences(text):
    """d/dx against a central difference at h = 1e-5: truncation ~h^2 f''' and rounding
    ~eps |f| / h, both below 1e-8 for these smooth functions on [-2, 2] (x away from 0 for
    |x|)."""
    e = parse(text, ("x",))
    x = rng.uniform(0.2, 2, 40) * rng.choice([-1, 1], 40)
    h = 1e-5
    fd = (evaluate(e, {"x": x + h}) - evaluate(e, {"x": x - h})) / (2 * h)
    np.testing.assert_allclose(evaluate(derivative(e, "x"), {"x": x}), fd, rtol=1e-7, atol=1e-8)


def test_every_function_differentiates():
    assert {text for text in FUNCTIONS} <= {"sqrt", "exp", "log", "sin", "cos", "tan", "sinh",
                                            "cosh", "tanh", "abs", "atan", "erf"}
    x = rng.uniform(0.3, 0.9, 10)
    for f in FUNCTIONS:
        e = parse(f"{f}(x)", ("x",))
        fd = (evaluate(e, {"x": x + 1e-6}) - evaluate(e, {"x": x - 1e-6})) / 2e-6
        np.testing.assert_allclose(evaluate(derivative(e, "x"), {"x": x}), fd, rtol=1e-6, err_msg=f)


def _c_as_python(src):
    """The C of c_source back as Python (pow -> **, fabs -> abs): Python's grammar groups
    + - * / and unary minus as C does, so evaluating it checks the printed grouping."""
    import re
    return re.sub(r"\bfabs\(", "abs(", src)


def test_c_source_keeps_the_tree_grouping():
    names = ("a", "b", "c", "x")
    env = {k: rng.uniform(0.5, 2.0, 20) for k in names}
    for text in ["a - (b - c)", "a / (b / c)", "a - b - c", "a / b / c", "a * (b * c)",
                 "-(a + b) * c", "-a ** 2", "2 * -x", "a + (b + c)", "(a + b) * (c - x)",
                 "sqrt(a * a + b) / -(c - x) - -1.5", "abs(a - b) ** 1.5"]:
        e = parse(text, names)
        src = c_source(e)
        py = parse(_c_as_python(src), names + ("pow",)) if "pow" not in src else None
        want = evaluate(e, env)
        if py is not None:
            np.testing.assert_array_equal(evaluate(py, env), want, err_msg=f"{text} -> {src}")
        else:      # pow(u, v): check its arguments print as the tree's
            assert src.count("pow(") == sum(1 for _ in _walk(e) if _.op == "**"), src


def _walk(e):
    yield e
    for a in e.args:
        yield from _walk(a)


def test_soft_core_definition_is_the_host_formula():
    """SoftCore.term evaluated on the host gives coulomb()'s bits (the same operations); its
    force is -d term / dr (the derivative of the definition, to rounding), and coulomb_force
    computes it."""
    from tdse.model.potential import SoftCore, coulomb, coulomb_force
    x = rng.uniform(-10, 10, 200)
    Z, X, a = rng.uniform(0.5, 3), rng.uniform(-1, 1), rng.uniform(0.05, 2)
    env = {"Z": Z, "r": x - X, "a": a}
    np.testing.assert_array_equal(evaluate(SoftCore.term, env), coulomb(Z, X, a, x))
    force = evaluate(SoftCore.force, env)
    np.testing.assert_allclose(force, coulomb_force(Z, X, a, x), rtol=1e-15, atol=0)
    np.testing.assert_allclose(force, -evaluate(derivative(SoftCore.term, "r"), env),
                               rtol=1e-13, atol=1e-15)


def test_generated_device_sources_read_the_definitions():
    """The device sources are printed from the definitions: V's and dV/dx's loops hold the
    soft-core term's and force's C, a formula's its own (parameters read per member, t from
    the step's slot, u**2 as a product), the measuring kernel one line a sum of SUMS."""
    from tdse.backends.cupy.measure import measure_source
    from tdse.backends.cupy.potential import device_dv, device_v
    from tdse.model.observables import SUMS
    from tdse.model.potential import SoftCore
    assert "v -= Z / sqrt(r * r + a);" in device_v(SoftCore.device)
    assert "g += Z * r / pow(r * r + a, 1.5);" in device_dv(SoftCore.device)
    other = parse("Z * exp(-r * r / a)", ("Z", "r", "a"))
    assert "v -= Z * exp(-r * r / a);" in device_v(("centres", other, other))
    V = parse("-Z / sqrt((x - R * sin(t))**2 + a)", ("x", "t", "Z", "R", "a"))
    src = device_v(("formula", V, derivative(V, "x"), ("R", "Z", "a")))
    assert "const double tt = P[q + 1];" in src and "const double p_a = Q[2 * nb + b];" in src
    assert ("v += -p_Z / sqrt(((x - p_R * sin(tt)) * (x - p_R * sin(tt))) + p_a);" in src), src
    src = measure_source(SoftCore.device, tuple(SUMS.values()))
    assert src.startswith(f"#define NS {len(SUMS)}\n")
    for j, e in enumerate(SUMS.values()):
        assert f"s[{j}] += " in src
    assert f"s[{len(SUMS)}]" not in src and "s[2] += xi * w;" in src and "s[7] += k[i] * f2;" in src
    assert "double r = xi - P[q + 1 + c];" in src


def test_a_squared_term_prints_as_a_product_numpy_squares_alike():
    """u ** 2 -> (u * u) in C; NumPy's u ** 2.0 is its square, the same rounding."""
    u = rng.uniform(-3, 3, 100)
    e = parse("(x - 1) ** 2", ("x",))
    assert c_source(e) == "((x - 1.0) * (x - 1.0))"
    np.testing.assert_array_equal(evaluate(e, {"x": u}), (u - 1.0) * (u - 1.0))


def test_a_formulas_names_never_clash_with_the_templates():
    """Parameters named as the kernels' placeholders (MOLECULE, SUMS) or their variables (b,
    q, x, d) print as p_<name>: the generated sources keep every sum and read each
    parameter from its own slot."""
    from tdse.backends.cupy.measure import measure_source
    from tdse.backends.cupy.potential import device_v
    from tdse.model.observables import SUMS
    names = ("MOLECULE", "SUMS", "b", "q", "d")
    V = parse("-SUMS / sqrt(x**2 + MOLECULE) + b * q * d", ("x", "t") + names)
    dev = ("formula", V, derivative(V, "x"), names)
    src = measure_source(dev, tuple(SUMS.values()))
    assert all(f"const double p_{k} = Q[{j} * nb + b];" in src for j, k in enumerate(names))
    assert all(f"s[{j}] += " in src for j in range(len(SUMS)))
    assert "const double p_SUMS" in device_v(dev) and "MOLECULE;" not in device_v(dev)

