"""NumPy submodules a run never uses, loaded only if used -- in tdse's own processes (the
command line's, the eigenpairs look-ahead's workers).

SciPy 1.17 builds its array-API namespace by cloning NumPy's
(``scipy._lib.array_api_compat.numpy``: ``from numpy import *`` and every name of
``dir(numpy)``), which imports ``numpy.f2py`` and ``numpy.testing`` on the first import of
``scipy.linalg`` -- ~85 ms of the CLI's ~0.35 s of imports on a 2-core box (f2py's
``crackfortran`` alone ~54 ms; ``python -X importtime``), and ``numpy.char``, ``numpy.rec``
and ``numpy.ctypeslib`` (~9-14 ms more; not ``numpy.ma``, ~55 ms, which SciPy's input checks
use at every linalg call: ``np.ma.isMaskedArray``).  The command line registers them
with the standard library's lazy loader (:class:`importlib.util.LazyLoader`, the recipe of
the ``importlib`` documentation): the module object exists at once, its code runs on its
first attribute access -- so being named by SciPy's clone costs nothing, and using them
works as before.  Done by the CLI (:mod:`tdse.ui.cli`) and the look-ahead's workers
(:mod:`tdse.run.ahead_child`) only: importing tdse leaves its caller's imports alone.
"""
from __future__ import annotations

import importlib.util
import sys

#: the submodules SciPy's clone of NumPy imports and a run does not use
LAZY = ("numpy.f2py", "numpy.testing", "numpy.char", "numpy.rec", "numpy.ctypeslib")


def defer(names=LAZY) -> None:
    """Register each of ``names`` not yet imported as a lazily loaded module."""
    for name in names:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            continue
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        parent, _, child = name.rpartition(".")
        setattr(sys.modules[parent], child, module)    # (as the import system binds a submodule)
