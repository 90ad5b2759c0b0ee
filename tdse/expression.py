"""Arithmetic expressions as data: parsed from text by a whitelist, never ``eval``'ed
(STYLE.md items 5 and 17).

A formula -- a potential's term, its force, a user's V(x, t) or E(t) -- is written once as
text in Python's syntax and parsed here into a small immutable tree of :class:`Expr`.  Only
numbers, the names the caller allows, ``+ - * / **``, unary ``-``/``+`` and the functions
in :data:`FUNCTIONS` pass; anything else (attributes, subscripts, comparisons, lambdas,
keywords, unknown names) is refused with one line naming the key and the offending part.
The same tree is evaluated on the host or a device array module (:func:`evaluate`),
differentiated (:func:`derivative`), and printed as C for the device kernels
(``tdse.backends.cupy.codegen``): the host and device paths come from one definition.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from .errors import ConfigError

__all__ = ["Expr", "parse", "evaluate", "derivative", "FUNCTIONS", "CONSTANTS"]

#: the functions an expression may call (one argument each): name -> the array module's name
FUNCTIONS = {"sqrt": "sqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos",
             "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "abs": "abs",
             "atan": "arctan", "erf": "erf"}

#: named constants an expression may use
CONSTANTS = {"pi": np.pi}

_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


@dataclass(frozen=True)
class Expr:
    """One node: ``op`` is "num" (``value`` a float), "name" (``value`` a str), "neg",
    "call" (``value`` the function's name, one argument) or one of ``+ - * / **`` (two
    arguments); ``args`` the operands."""
    op: str
    args: tuple = ()
    value: object = None

    def names(self) -> frozenset:
        """The names the expression reads."""
        if self.op == "name":
            return frozenset([self.value])
        return frozenset().union(*(a.names() for a in self.args)) if self.args else frozenset()

    def __str__(self) -> str:
        if self.op == "num":
            return repr(float(self.value))
        if self.op == "name":
            return str(self.value)
        if self.op == "neg":
            return f"(-{self.args[0]})"
        if self.op == "call":
            return f"{self.value}({self.args[0]})"
        return f"({self.args[0]} {self.op} {self.args[1]})"


def num(v) -> Expr:
    return Expr("num", (), float(v))


def parse(text: str, names, key: str = "expression") -> Expr:
    """The tree of ``text``; ``names``: the variables it may read (besides
    :data:`CONSTANTS`).  Raises :class:`~tdse.errors.ConfigError` naming ``key``."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(key, text, "must be a formula, e.g. \"-1 / sqrt(x**2 + 2)\"")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise ConfigError(key, text, f"is not a formula ({e.msg})") from None
    except (RecursionError, MemoryError):
        raise ConfigError(key, text, "is nested too deeply (write it with fewer terms)") from None
    allowed = frozenset(names)

    def walk(n):
        if isinstance(n, ast.Constant) and type(n.value) in (int, float):
            return num(n.value)
        if isinstance(n, ast.Name):
            if n.id in allowed:
                return Expr("name", (), n.id)
            if n.id in CONSTANTS:
                return num(CONSTANTS[n.id])
            raise ConfigError(key, text, f"unknown name {n.id!r} (allowed: "
                              f"{', '.join(sorted(allowed | set(CONSTANTS)))})")
        if isinstance(n, ast.BinOp) and type(n.op) in _BINARY:
            return Expr(_BINARY[type(n.op)], (walk(n.left), walk(n.right)))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            a = walk(n.operand)
            return Expr("neg", (a,)) if isinstance(n.op, ast.USub) else a
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in FUNCTIONS:
            if len(n.args) != 1 or n.keywords:
                raise ConfigError(key, text, f"{n.func.id}() takes one argument")
            return Expr("call", (walk(n.args[0]),), n.func.id)
        if isinstance(n, ast.Call):
            raise ConfigError(key, text, f"unknown function (allowed: {', '.join(sorted(FUNCTIONS))})")
        raise ConfigError(key, text, f"{ast.unparse(n)!r} is not allowed (numbers, names, "
                          "+ - * / **, and functions)")

    try:
        return walk(tree)
    except RecursionError:
        raise ConfigError(key, text, "is nested too deeply (write it with fewer terms)") from None


def _erf(xp):
    if xp is np:
        from scipy.special import erf
        return erf
    import cupyx.scipy.special
    return cupyx.scipy.special.erf


def evaluate(e: Expr, env: dict, xp=np):
    """The value of ``e`` with ``env`` (name -> number or array of ``xp``), broadcasting as
    NumPy does."""
    op = e.op
    if op == "num":
        return e.value
    if op == "name":
        return env[e.value]
    if op == "neg":
        return -evaluate(e.args[0], env, xp)
    if op == "call":
        f = _erf(xp) if e.value == "erf" else getattr(xp, FUNCTIONS[e.value])
        return f(evaluate(e.args[0], env, xp))
    a, b = (evaluate(x, env, xp) for x in e.args)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a / b
    return a ** b


def _is(e, v):
    return e.op == "num" and e.value == v


def _mul(a, b):
    if a.op == "num" and b.op == "num":
        return num(a.value * b.value)
    if _is(a, 0.0) or _is(b, 0.0):
        return num(0.0)
    if _is(a, 1.0):
        return b
    if _is(b, 1.0):
        return a
    return Expr("*", (a, b))


def _add(a, b):
    if a.op == "num" and b.op == "num":
        return num(a.value + b.value)
    if _is(a, 0.0):
        return b
    if _is(b, 0.0):
        return a
    return Expr("+", (a, b))


def _sub(a, b):
    if a.op == "num" and b.op == "num":
        return num(a.value - b.value)
    if _is(b, 0.0):
        return a
    if _is(a, 0.0):
        return Expr("neg", (b,))
    return Expr("-", (a, b))


def _div(a, b):
    return num(0.0) if _is(a, 0.0) else Expr("/", (a, b))


#: d f(u) / du of each function, as a tree in u
_CHAIN = {
    "sqrt": lambda u: _div(num(0.5), Expr("call", (u,), "sqrt")),
    "exp": lambda u: Expr("call", (u,), "exp"),
    "log": lambda u: _div(num(1.0), u),
    "sin": lambda u: Expr("call", (u,), "cos"),
    "cos": lambda u: Expr("neg", (Expr("call", (u,), "sin"),)),
    "tan": lambda u: _add(num(1.0), _mul(Expr("call", (u,), "tan"), Expr("call", (u,), "tan"))),
    "sinh": lambda u: Expr("call", (u,), "cosh"),
    "cosh": lambda u: Expr("call", (u,), "sinh"),
    "tanh": lambda u: _sub(num(1.0), _mul(Expr("call", (u,), "tanh"), Expr("call", (u,), "tanh"))),
    "abs": lambda u: _div(u, Expr("call", (u,), "abs")),
    "atan": lambda u: _div(num(1.0), _add(num(1.0), _mul(u, u))),
    "erf": lambda u: _mul(num(2.0 / np.sqrt(np.pi)),
                          Expr("call", (Expr("neg", (_mul(u, u),)),), "exp")),
}


def derivative(e: Expr, name: str) -> Expr:
    """d e / d ``name`` as a tree (the rules of calculus; a power's exponent may depend on
    ``name`` too: d u^v = u^v (v' log u + v u'/u))."""
    op = e.op
    if op == "num":
        return num(0.0)
    if op == "name":
        return num(1.0 if e.value == name else 0.0)
    if op == "neg":
        d = derivative(e.args[0], name)
        return num(0.0) if _is(d, 0.0) else Expr("neg", (d,))
    if op == "call":
        u = e.args[0]
        return _mul(_CHAIN[e.value](u), derivative(u, name))
    a, b = e.args
    da, db = derivative(a, name), derivative(b, name)
    if op == "+":
        return _add(da, db)
    if op == "-":
        return _sub(da, db)
    if op == "*":
        return _add(_mul(da, b), _mul(a, db))
    if op == "/":
        return _div(_sub(_mul(da, b), _mul(a, db)), _mul(b, b))
    # u ** v
    if _is(db, 0.0):
        return _mul(_mul(b, Expr("**", (a, _sub(b, num(1.0))))), da)
    return _mul(e, _add(_mul(db, Expr("call", (a,), "log")), _div(_mul(b, da), a)))
