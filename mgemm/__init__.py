"""mgemm: band-based asynchronous multi-GPU GEMM and matrix exponent.

After Choi, Nikolskiy & Stegailov (2020, GloSIC; 2022, PCT) and Choi's 2024 thesis.
CuPy is optional: everything imports and runs on the CPU without it.
"""
from .gemm import gemm, COMPLEX_METHODS
from .expm import expm, expm_plan_for
from .plan import ExpmPlan, plan_expm
from . import executors
from .executors import last_trace

__version__ = "0.2.0"

__all__ = ["gemm", "expm", "expm_plan_for", "ExpmPlan", "plan_expm", "executors",
           "COMPLEX_METHODS", "last_trace", "__version__"]
