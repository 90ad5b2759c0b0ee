"""The tile-size performance model of Choi, Nikolskiy & Stegailov (2022), as plain data.

Square N x N operands, G GPUs, tile (band width) N_i.  Thesis summary eqs. 5-9 state
the paper's model; the equation numbers below are the paper's, as the issue lists them:

* T_GEMM = max(T_mem, T_math) (eq. 1, T_instr << T_math);
* intensity I = f N_i^2 N / (b (2 N N_i + N_i^2)); math-bound when I > k_BW =
  BW_math / BW_mem, i.e. N_i > 2 b k N / (f N - b k)  (eqs. 2-4; fp32, f = 2, b = 4 gives
  the paper's N_i > 4 k N / (N - 2k));
* T_math = f N_i^2 N / BW_math, T_mem = b (2 N N_i + N_i^2) / BW_mem (eqs. 5-6);
* T_transfer = b N_i N / BW_transfer + T_latency (eqs. 9-11);
  T_kernel = max(T_GEMM, (G - 1) T_transfer) (eq. 7): the (G - 1) is one source feeding
  G - 1 workers through its one shared link budget (measured on 4 H200: one GPU sending
  to three peers totals ~396 GB/s, the same as to one);
* transfers hidden when N_i > (G - 1) b BW_math / (f BW_transfer) (eq. 12; fp32: 2(G-1)
  BW_math/BW_transfer), or, memory-bound, N_i > N ((G - 1) BW_mem/BW_transfer - 2) (eq. 13).

Generalised here to every dtype and complex method: ``b`` bytes per element and ``f``
flops per multiply-add (2 real, 8 complex); ``4m`` is 4 real products of the real halves,
each a full pass of the engine (4 band transfers of b/2); ``3m`` is fused into one pass
(:mod:`mgemm.schedule`): bands of three real planes (b = 3 b_real) and three real GEMMs
per tile (f = 3 x 2), at the *real* GEMM rate (BW_math of the real type).

Two variants of T_task:

* ``paper``  -- T_task = 3 T_transfer + N / (N_i G) T_kernel (eq. 8 as printed);
* ``refined`` (default) -- counts what the schedule really does: each worker runs
  ceil(N/N_i / G) A bands (load imbalance when G does not divide N/N_i) of N/N_i tiles,
  T_task = 3 T_transfer + ceil(N/N_i/G) (N/N_i) T_kernel (the printed eq. 8 has one
  factor N/N_i fewer: its time does not grow with N^3); and BW_math is the rate the
  probe measured *at that tile shape* (``Hardware.math_curve``), not the one peak: on
  H200 a 1024 x 16384 x 1024 ZGEMM runs well below a large one.

The best tile: ``paper`` -- the smallest power of two meeting eq. 4 and eq. 12 (or 13),
at most N/G (eqs. 14-15: T_task grows with N_i); ``refined`` -- the power of two with the
least predicted T_task.  Nothing here imports a GPU library.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

__all__ = ["REAL_OF", "Hardware", "Prediction", "dtype_factors", "predict", "best_tile",
           "model_report",
           "VARIANTS"]

VARIANTS = ("refined", "paper")

_DTYPES = {"float32": (4, 2), "float64": (8, 2), "complex64": (8, 8), "complex128": (16, 8)}
REAL_OF = {"complex64": "float32", "complex128": "float64"}


@dataclass(frozen=True)
class Hardware:
    """Per-GPU rates in SI units: FLOP/s, byte/s, byte/s, seconds.

    ``bw_transfer`` is what one *source* GPU sends in total (shared by its peers)."""
    bw_math: float
    bw_mem: float
    bw_transfer: float
    latency: float = 0.0
    #: measured GEMM rate per tile, ((N_i, FLOP/s), ...) for an N_i x K x N_i product
    #: (``mgemm probe``); the refined variant uses it instead of the one peak rate
    math_curve: tuple = ()

    def math_rate(self, tile: int) -> float:
        """BW_math at this tile: the peak, or the probe's curve interpolated in log2(N_i)
        (clamped at its ends)."""
        if not self.math_curve:
            return self.bw_math
        pts = sorted((math.log2(t), r) for t, r in self.math_curve)
        x = math.log2(tile)
        if x <= pts[0][0]:
            return pts[0][1]
        for (x0, r0), (x1, r1) in zip(pts, pts[1:]):
            if x <= x1:
                return r0 + (r1 - r0) * (x - x0) / (x1 - x0)
        return pts[-1][1]

    def __post_init__(self):
        for key in ("bw_math", "bw_mem", "bw_transfer"):
            v = getattr(self, key)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{key} must be a finite number > 0, got {key}={v!r}")
        if not (math.isfinite(self.latency) and self.latency >= 0):
            raise ValueError(f"latency must be finite and >= 0, got latency={self.latency!r}")
        for t, r in self.math_curve:
            if not (t >= 1 and math.isfinite(r) and r > 0):
                raise ValueError(f"math_curve entries must be (tile >= 1, rate > 0), got {(t, r)!r}")


def dtype_factors(dtype: str, complex_method: str = "native"):
    """(bytes per element b, flops per multiply-add f, number of engine passes).

    Real dtypes and native complex: one pass.  ``4m``: 4 passes of the real type (half
    the bytes, f = 2).  ``3m``: one pass moving three real planes (b = 3 b_real) and
    doing three real multiply-adds per element (f = 6); its BW_math is the real type's."""
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got dtype={dtype!r}")
    if complex_method not in ("native", "4m", "3m"):
        raise ValueError(f"complex_method must be native, 4m or 3m, got complex_method={complex_method!r}")
    if complex_method == "native" or dtype not in REAL_OF:
        b, f = _DTYPES[dtype]
        return b, f, 1
    b, f = _DTYPES[REAL_OF[dtype]]
    return (b, f, 4) if complex_method == "4m" else (3 * b, 3 * f, 1)


@dataclass(frozen=True)
class Prediction:
    tile: int
    intensity: float
    t_math: float
    t_mem: float
    t_gemm: float
    t_transfer: float
    t_kernel: float
    t_task: float
    rate: float          # useful FLOP/s of the whole product (complex: 8 N^3 / t_task)
    bound: str           # "math" or "memory"
    transfers_hidden: bool

    def as_dict(self):
        return asdict(self)


def _check(n, g, tile=None):
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be an integer >= 1, got n={n!r}")
    if not (isinstance(g, int) and g >= 1):
        raise ValueError(f"gpus must be an integer >= 1, got gpus={g!r}")
    if tile is not None and not (isinstance(tile, int) and 1 <= tile <= n):
        raise ValueError(f"tile must be an integer in [1, n={n}], got tile={tile!r}")


def bounds(n, g, hw: Hardware, dtype="float32", complex_method="native") -> dict:
    """The tile lower bounds: eq. 4 (math-bound GEMM), eq. 12 (math-bound, transfers
    hidden) and eq. 13 (memory-bound, transfers hidden).  inf where unreachable."""
    _check(n, g)
    b, f, _ = dtype_factors(dtype, complex_method)
    k = hw.bw_math / hw.bw_mem
    eq4 = 2 * b * k * n / (f * n - b * k) if f * n > b * k else math.inf
    eq12 = (g - 1) * b * hw.bw_math / (f * hw.bw_transfer)
    eq13 = n * ((g - 1) * hw.bw_mem / hw.bw_transfer - 2)
    return {"k_bw": k, "eq4": eq4, "eq12": eq12, "eq13": max(eq13, 0.0)}


def predict(n, g, tile, hw: Hardware, dtype="float32", complex_method="native",
            variant="refined") -> Prediction:
    """Predicted times of one N x N x N product on G GPUs with band width ``tile``."""
    _check(n, g, tile)
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got variant={variant!r}")
    b, f, passes = dtype_factors(dtype, complex_method)
    t = tile
    t_math = f * t * t * n / (hw.bw_math if variant == "paper" else hw.math_rate(t))
    t_mem = b * (2 * n * t + t * t) / hw.bw_mem
    t_gemm = max(t_math, t_mem)
    t_transfer = b * t * n / hw.bw_transfer + hw.latency
    t_kernel = max(t_gemm, (g - 1) * t_transfer)
    if variant == "paper":
        t_task = 3 * t_transfer + n / (t * g) * t_kernel
    else:
        bands = math.ceil(n / t)
        t_task = 3 * t_transfer + math.ceil(bands / g) * bands * t_kernel
    t_task *= passes
    flops = (8 if dtype in REAL_OF else 2) * float(n) ** 3
    return Prediction(tile=t, intensity=f * t * n / (b * (2 * n + t)), t_math=t_math,
                      t_mem=t_mem, t_gemm=t_gemm, t_transfer=t_transfer, t_kernel=t_kernel,
                      t_task=t_task, rate=flops / t_task,
                      bound="math" if t_math >= t_mem else "memory",
                      transfers_hidden=t_gemm >= (g - 1) * t_transfer)


def candidates(n, g):
    """Powers of two up to N/G (at least one candidate: the largest power <= max(N/G, 1))."""
    top = max(1, n // g)
    out, t = [], 1
    while t <= top:
        out.append(t)
        t *= 2
    return out


def best_tile(n, g, hw: Hardware, dtype="float32", complex_method="native",
              variant="refined", min_tile=256) -> int:
    """The model's tile (see the module docstring); candidates below ``min_tile`` are
    skipped where larger ones exist (tiny GEMMs are launch-bound, outside the model)."""
    _check(n, g)
    cands = [t for t in candidates(n, g) if t >= min(min_tile, max(candidates(n, g)))]
    if variant == "paper":
        bd = bounds(n, g, hw, dtype, complex_method)
        need = max(bd["eq4"], min(bd["eq12"], bd["eq13"]) if g > 1 else 0.0)
        for t in cands:
            if t > need:
                return t
        return cands[-1]
    preds = [predict(n, g, t, hw, dtype, complex_method, variant) for t in cands]
    return min(preds, key=lambda p: (p.t_task, p.tile)).tile


def model_report(n, g, hw: Hardware, dtype="float32", complex_method="native",
                 variant="refined") -> dict:
    """Everything ``mgemm model --json`` prints: the tile, the bounds, each candidate."""
    return {"n": n, "gpus": g, "dtype": dtype, "complex_method": complex_method,
            "variant": variant, "hardware": asdict(hw),
            "tile": best_tile(n, g, hw, dtype, complex_method, variant),
            "bounds": bounds(n, g, hw, dtype, complex_method),
            "candidates": [predict(n, g, t, hw, dtype, complex_method, variant).as_dict()
                           for t in candidates(n, g)]}
