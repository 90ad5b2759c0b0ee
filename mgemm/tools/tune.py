"""``mgemm tune``: rate against tile for each N on the GPUs present, with the model's
prediction and the peak line (like Fig. 3 of Choi, Nikolskiy & Stegailov 2020).

For each N and tile (powers of two up to N/G): C = A B with A, B, C placed per
``placement``; median wall time of ``repeat`` calls.  The model (both variants) is
evaluated with the machine profile's parameters; the JSON rows hold measured and
predicted times side by side, so the comparison is data, not a claim.

:func:`mgemm.profile.tuned_entries` turns a sweep's measured best tiles into the profile's
``tuned`` list (``mgemm tune --save``), which ``tile="auto"`` takes before the model for the same
(dtype, complex method, GPUs, N): the model leaves out what a sweep sees (e.g. 3m at
N = 32768 on 2 H200: tile 4096 1.7 % faster than 2048, whose real GEMMs run as fast).
"""
from __future__ import annotations

import numpy as np

from ..model import VARIANTS, best_tile, candidates, predict
from ..profile import hardware_from_profile
from .common import flops, free_gpu_memory, rand_matrix, time_call


def run_tune(sizes, gpus, profile, dtype="complex128", placement="three", repeat=3,
             min_tile=512, progress=print, complex_method="native"):
    import cupy as cp

    from .. import executors
    from ..executors.common import roles
    from ..gemm import gemm
    devices = list(range(gpus))
    a_dev, b_dev, c_dev = roles(placement, devices)
    cm = complex_method
    hw = hardware_from_profile(profile, dtype, cm)
    rows = []
    for n in sizes:
        A = rand_matrix(cp, a_dev, n, dtype, 1)
        B = rand_matrix(cp, b_dev, n, dtype, 2)
        with cp.cuda.Device(c_dev):
            C = cp.empty((n, n), dtype=dtype)
        tiles = [t for t in candidates(n, gpus) if t >= min_tile]
        for t in tiles:
            try:
                sec = time_call(cp, lambda: gemm(A, B, C, devices=devices, tile=t, complex_method=cm),
                            repeat, devices)
            except MemoryError as e:
                progress(f"N={n} tile={t}: {e}")
                continue
            row = {"n": n, "gpus": gpus, "dtype": dtype, "complex_method": cm,
                   "placement": placement, "tile": t,
                   "copy_side": executors.get("cupy").copy_side,
                   "seconds": sec, "tflops": flops(n, dtype) / sec / 1e12}
            for v in VARIANTS:
                p = predict(n, gpus, t, hw, dtype, cm, variant=v)
                row[f"predicted_seconds_{v}"] = p.t_task
            rows.append(row)
            progress(f"N={n} G={gpus} tile={t}: {row['tflops']:.1f} TFLOP/s "
                     f"(model {row['predicted_seconds_refined']:.3f} s, measured {sec:.3f} s)")
        del A, B, C
        free_gpu_memory(cp)
    summary = []
    for n in sizes:
        rs = [r for r in rows if r["n"] == n]
        if not rs:
            continue
        best = min(rs, key=lambda r: r["seconds"])
        entry = {"n": n, "gpus": gpus, "dtype": dtype, "complex_method": cm,
                 "placement": placement, "measured_best_tile": best["tile"],
                 "measured_best_seconds": best["seconds"]}
        for v in VARIANTS:
            bt = best_tile(n, gpus, hw, dtype, cm, variant=v, min_tile=min_tile)
            at = [r for r in rs if r["tile"] == bt]
            entry[f"predicted_tile_{v}"] = bt
            entry[f"within_one_power_of_two_{v}"] = bool(abs(np.log2(bt / best["tile"])) <= 1)
            if at:
                entry[f"time_error_{v}"] = float((at[0][f"predicted_seconds_{v}"] - at[0]["seconds"]) / at[0]["seconds"])
        summary.append(entry)
    return rows, summary


def plot_tune(rows, profile, path, dtype="complex128"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sizes = sorted({(r["n"], r["gpus"]) for r in rows})
    ncol = min(2, len(sizes))
    nrow = -(-len(sizes) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.5 * ncol, 4 * nrow), squeeze=False)
    peak1 = profile["bw_math"][dtype] / 1e12
    for ax, (n, g) in zip(axes.ravel(), sizes):
        rs = sorted([r for r in rows if r["n"] == n and r["gpus"] == g], key=lambda r: r["tile"])
        t = [r["tile"] for r in rs]
        flops = 8 * float(n) ** 3 if dtype.startswith("complex") else 2 * float(n) ** 3
        ax.plot(t, [r["tflops"] for r in rs], "o-", label="measured")
        for v, st in zip(VARIANTS, ("--", ":")):
            ax.plot(t, [flops / r[f"predicted_seconds_{v}"] / 1e12 for r in rs], st,
                    label=f"model ({v})")
        ax.axhline(g * peak1, color="k", lw=0.8, label=f"{g} x single-GPU GEMM")
        ax.set_ylim(0, 1.35 * g * peak1)  # the paper's eq. 8 as printed runs off the top
        ax.set_xscale("log", base=2)
        ax.set_xlabel("tile N_i")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"N = {n}, {g} GPUs, {dtype}"
                     + (f" ({rs[0]['complex_method']})" if rs[0].get("complex_method", "native")
                        != "native" else ""))
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
