"""C source of an :class:`tdse.expression.Expr` (STYLE.md item 17: the device code is
generated from the formula the host evaluates).  Parentheses are printed wherever the C
grammar would otherwise group the operands differently from the tree -- floating-point
``a + (b + c)`` is not ``(a + b) + c`` -- so the compiled operations are the tree's, in its
order; ``u ** v`` becomes ``pow(u, v)``, ``u ** 2`` the product ``u * u`` (NumPy's square)."""
from __future__ import annotations

from ...expression import Expr

#: the C (CUDA math library) name of each expression function
C_FUNCTIONS = {"sqrt": "sqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos",
               "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "abs": "fabs",
               "atan": "atan", "erf": "erf"}

_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3}


def _prec(e: Expr) -> int:
    return _PREC.get(e.op, 4)


def c_source(e: Expr, symbols: dict | None = None) -> str:
    """``e`` as a C expression of doubles; ``symbols`` maps a name to the C that reads it
    (default: the name itself)."""
    symbols = symbols or {}
    op = e.op
    if op == "num":
        v = float(e.value)
        return f"({v!r})" if v < 0 else repr(v)
    if op == "name":
        return symbols.get(e.value, e.value)
    if op == "call":
        return f"{C_FUNCTIONS[e.value]}({c_source(e.args[0], symbols)})"
    if op == "**" and e.args[1].op == "num" and e.args[1].value == 2.0:
        u = c_source(e.args[0], symbols)       # u * u: NumPy's square, exact (pow is not)
        u = u if _prec(e.args[0]) > 2 else f"({u})"
        return f"({u} * {u})"
    if op == "**":
        return f"pow({c_source(e.args[0], symbols)}, {c_source(e.args[1], symbols)})"
    if op == "neg":
        a = c_source(e.args[0], symbols)
        return f"-{a}" if _prec(e.args[0]) > 3 else f"-({a})"
    a, b = e.args
    p = _PREC[op]
    left = c_source(a, symbols)
    right = c_source(b, symbols)
    if _prec(a) < p:
        left = f"({left})"
    if _prec(b) <= p:            # the right operand of an equal-precedence operator: grouped
        right = f"({right})"
    return f"{left} {op} {right}"
