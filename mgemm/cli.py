"""``mgemm`` command line (thin wrappers): plan and model (no GPU), and the measuring
tools of :mod:`mgemm.tools` (bench, bench-expm, probe, tune)."""
from __future__ import annotations

import json

import click


def _need_gpus(command, gpus=(1,)):
    """One-line usage error (exit 2) unless CuPy sees at least max(gpus) GPUs."""
    from .arrays import gpu_count
    have = gpu_count()
    if have == 0:
        raise click.UsageError(f"mgemm {command} needs CuPy and a GPU")
    if gpus and max(gpus) > have:
        raise click.UsageError(f"--gpus {max(gpus)}: only {have} GPUs present")


def _version():
    from . import __version__
    return __version__


@click.group()
@click.version_option(_version(), prog_name="mgemm")
def main():
    """Band-based asynchronous multi-GPU GEMM (Choi, Nikolskiy & Stegailov)."""


@main.command()
@click.option("--n", "n", type=click.IntRange(1, None), required=True)
@click.option("--gpus", type=click.IntRange(1, None), default=4, show_default=True)
@click.option("--tile", type=click.IntRange(1, None), default=None)
@click.option("--placement", type=click.Choice(["one", "three"]), default="three", show_default=True)
@click.option("--complex-method", "method", type=click.Choice(["native", "3m"]), default="native",
              show_default=True, help="3m: the fused Gauss schedule (complex operands)")
@click.option("--explain", is_flag=True, help="list every op")
def plan(n, gpus, tile, placement, method, explain):
    """Print the band schedule for an N x N x N product (no GPU needed)."""
    from .executors.common import resolve_tile, roles
    from .schedule import plan_gemm
    a, b, c = roles(placement, list(range(gpus)))
    s = plan_gemm(n, n, n, workers=list(range(gpus)), a_dev=a, b_dev=b, c_dev=c,
                  tile=resolve_tile(tile, n, n, gpus), beta_zero=True, method=method)
    click.echo(s.explain())
    if explain:
        for op in s.ops:
            deps = ",".join(f"#{d}" for d in op.deps)
            pace = "".join(f" after #{d}" for d in op.after)
            click.echo(f"{op}  deps[{deps}]{pace}")


@main.command()
@click.option("--n", "sizes", type=int, multiple=True, default=[16384, 32768], show_default=True)
@click.option("--dtype", default="complex128", show_default=True,
              type=click.Choice(["float32", "float64", "complex64", "complex128"]))
@click.option("--gpus", "gpus", type=int, multiple=True, default=[1, 2, 4], show_default=True)
@click.option("--placement", "placements", multiple=True, default=["three", "one"],
              type=click.Choice(["one", "three"]), show_default=True)
@click.option("--tile", "tiles", multiple=True, default=["auto"], show_default=True)
@click.option("--complex-method", "cms", multiple=True, default=["native", "3m"], show_default=True,
              type=click.Choice(["native", "4m", "3m"]))
@click.option("--repeat", type=int, default=3, show_default=True)
@click.option("--no-xt", is_flag=True, help="skip the cuBLAS-XT baseline")
@click.option("--no-jax", is_flag=True, help="skip JAX's sharded matmul (run where JAX is installed)")
@click.option("--timeline", type=click.Path(dir_okay=False), default=None)
@click.option("--copy-side", type=click.Choice(["dst", "src"]), default="src", show_default=True,
              help="band copies pushed by the sender (src) or pulled by the receiver (dst)")
@click.option("--interleave", type=click.Choice(["tile", "band"]), default="tile", show_default=True,
              help="issue order across workers: tile by tile, or a whole band per worker")
@click.option("--plane-copies", type=click.Choice(["all", "first", "none"]), default="all",
              show_default=True, help="3m: bands sent as one copy per real plane (all, the first "
                                      "bands only, none)")
@click.option("--row-tile", type=click.IntRange(min=1), default=None,
              help="A band height, when it should differ from the tile")
@click.option("--balance", is_flag=True,
              help="also time each multi-GPU configuration with rows per GPU balanced from a "
                   "traced run (mgemm.balance)")
@click.option("--json-out", type=click.Path(dir_okay=False), default=None)
def bench(sizes, dtype, gpus, placements, tiles, cms, repeat, no_xt, no_jax, timeline, copy_side,
          interleave, plane_copies, row_tile, balance, json_out):
    """Time mgemm against single-GPU cuBLAS, cuBLAS-XT and JAX's sharded matmul on the
    GPUs present.  --timeline draws the last N on the most GPUs, placement (ii), once per
    complex method (FILE.png for the first, FILE_<method>.png for the others), each at the
    tile of its fastest measured row."""
    _need_gpus("bench", gpus)
    from . import executors
    from .tools.bench import run_bench
    executors.get("cupy").copy_side = copy_side
    executors.get("cupy").interleave = interleave
    executors.get("cupy").plane_copies = plane_copies
    executors.get("cupy").row_tile = row_tile
    rows = run_bench(list(sizes), dtype, list(gpus), list(placements), list(tiles), list(cms),
                     repeat, () if no_xt else (2048, 4096, 8192), timeline, use_jax=not no_jax,
                     balance=balance,
                     progress=lambda s: click.echo(s, err=True),
                     checkpoint=(lambda rows: _save(json_out, "gemm", "mgemm bench", rows))
                     if json_out else None)
    if json_out:
        _save(json_out, "gemm", "mgemm bench", rows)
    click.echo(f"{'N':>6} {'engine':12} {'G':>2} {'place':7} {'tile':>5} {'cm':6} {'TFLOP/s':>8} {'frac':>6}")
    for r in rows:
        if "tflops" in r:
            click.echo(f"{r['n']:6d} {r['engine']:12} {r['gpus']:2d} {r.get('placement', ''):7} "
                       f"{str(r.get('tile', '')):>5} {r.get('complex_method', ''):6} "
                       f"{r['tflops']:8.2f} {r['fraction']:6.3f}{' balanced' if r.get('balanced') else ''}")


def _si(value):
    """A rate like 5e13, 50T, 391G (SI suffixes K, M, G, T, P)."""
    mult = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
    v = str(value).strip()
    try:
        if v and v[-1].upper() in mult:
            return float(v[:-1]) * mult[v[-1].upper()]
        return float(v)
    except ValueError:
        return None


@main.command()
@click.option("--n", "n", type=int, required=True)
@click.option("--gpus", type=int, required=True)
@click.option("--bw-math", required=True, help="FLOP/s of one GPU for this dtype (3m: of its real type) (e.g. 50T)")
@click.option("--bw-mem", required=True, help="device memory byte/s (e.g. 4.8T)")
@click.option("--bw-transfer", required=True, help="byte/s one source sends in total (e.g. 391G)")
@click.option("--latency", default="0", show_default=True, help="seconds per transfer")
@click.option("--dtype", default="float32", show_default=True,
              type=click.Choice(["float32", "float64", "complex64", "complex128"]))
@click.option("--complex-method", default="native", show_default=True,
              type=click.Choice(["native", "4m", "3m"]))
@click.option("--variant", default="refined", show_default=True, type=click.Choice(["refined", "paper"]))
@click.option("--json", "as_json", is_flag=True)
def model(n, gpus, bw_math, bw_mem, bw_transfer, latency, dtype, complex_method, variant, as_json):
    """Predicted best tile and times from the 2022 paper's model (no GPU needed)."""
    from .model import Hardware, model_report
    vals = {}
    for key, raw in (("--bw-math", bw_math), ("--bw-mem", bw_mem), ("--bw-transfer", bw_transfer),
                     ("--latency", latency)):
        vals[key] = _si(raw)
        if vals[key] is None:
            raise click.UsageError(f"{key}={raw!r} is not a number")
        bare = str(raw).strip()[-1:].upper() not in "KMGTP"
        if key != "--latency" and bare and vals[key] < 1e6:
            raise click.UsageError(f"{key}={raw!r} reads as {vals[key]:g} per second; give a unit "
                                   f"suffix (e.g. {raw}T for {raw}e12) or the full number")
    try:
        hw = Hardware(vals["--bw-math"], vals["--bw-mem"], vals["--bw-transfer"], vals["--latency"])
        rep = model_report(n, gpus, hw, dtype, complex_method, variant)
    except ValueError as e:
        raise click.UsageError(str(e))
    if as_json:
        click.echo(json.dumps(rep, indent=1))
        return
    b = rep["bounds"]
    click.echo(f"N={n} G={gpus} {dtype}/{complex_method} ({variant}): best tile {rep['tile']}")
    click.echo(f"  k_BW={b['k_bw']:.1f}; eq.4 N_i > {b['eq4']:.1f}; eq.12 N_i > {b['eq12']:.1f}; "
               f"eq.13 N_i > {b['eq13']:.1f}")
    click.echo(f"  {'tile':>6} {'T_gemm ms':>10} {'T_xfer ms':>10} {'T_task s':>9} {'TFLOP/s':>8} bound")
    for c in rep["candidates"]:
        click.echo(f"  {c['tile']:6d} {c['t_gemm'] * 1e3:10.3f} {c['t_transfer'] * 1e3:10.3f} "
                   f"{c['t_task']:9.4f} {c['rate'] / 1e12:8.2f} {c['bound']}"
                   f"{'' if c['transfers_hidden'] else ' (transfers exposed)'}")


@main.command()
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None,
              help="profile file (default $MGEMM_PROFILE or ~/.cache/mgemm/profile.json)")
@click.option("--gemm-n", type=int, default=8192, show_default=True)
@click.option("--copy-mib", type=int, default=1024, show_default=True)
@click.option("--tile-k", type=click.IntRange(min=256), default=32768, show_default=True,
              help="K of the tile-shape GEMMs (the tile rates depend on it: give your problems' K)")
def probe(out, gemm_n, copy_mib, tile_k):
    """Measure BW_math, BW_mem, peer transfers and latency; save the machine profile."""
    _need_gpus("probe")
    import datetime as dt

    from .profile import save_profile
    from .tools.probe import run_probe
    doc = run_probe(gemm_n=gemm_n, copy_bytes=copy_mib << 20, tile_k=tile_k,
                    progress=lambda s: click.echo(s, err=True))
    doc["date"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    click.echo(f"profile written to {save_profile(doc, out)}")


@main.command()
@click.option("--n", "sizes", type=int, multiple=True, default=[16384, 32768], show_default=True)
@click.option("--gpus", "gpus", type=int, multiple=True, default=[2, 4], show_default=True)
@click.option("--dtype", default="complex128", show_default=True,
              type=click.Choice(["float32", "float64", "complex64", "complex128"]))
@click.option("--placement", default="three", show_default=True, type=click.Choice(["one", "three"]))
@click.option("--min-tile", type=int, default=512, show_default=True)
@click.option("--repeat", type=int, default=3, show_default=True)
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False), default=None)
@click.option("--plot", type=click.Path(dir_okay=False), default=None)
@click.option("--copy-side", type=click.Choice(["dst", "src"]), default="src", show_default=True)
@click.option("--complex-method", "cm", type=click.Choice(["native", "3m"]), default="native",
              show_default=True)
@click.option("--save", is_flag=True,
              help="write the measured best tiles into the profile: tile='auto' then uses them")
@click.option("--json-out", type=click.Path(dir_okay=False), default=None)
def tune(sizes, gpus, dtype, placement, min_tile, repeat, profile_path, plot, copy_side, cm, save,
         json_out):
    """Sweep tiles x N, compare with the model; plot and JSON."""
    from .profile import load_profile
    _need_gpus("tune", gpus)
    prof = load_profile(profile_path)
    if prof is None:
        raise click.UsageError("no machine profile: run `mgemm probe` first (or pass --profile)")
    from . import executors
    from .tools.tune import plot_tune, run_tune
    executors.get("cupy").copy_side = copy_side
    rows, summary = [], []
    for g in gpus:
        r, s = run_tune(list(sizes), g, prof, dtype, placement, repeat, min_tile,
                        progress=lambda m: click.echo(m, err=True), complex_method=cm)
        rows += r
        summary += s
    if save:
        from .profile import default_profile_path, save_profile, tuned_entries
        prof["tuned"] = tuned_entries(prof, summary)
        click.echo(f"tuned tiles written to {save_profile(prof, profile_path or default_profile_path())}")
    if json_out:
        _save(json_out, "tune", "mgemm tune", rows, profile=prof, summary=summary)
    if plot:
        plot_tune(rows, prof, plot, dtype)
    for s in summary:
        click.echo(f"N={s['n']} G={s['gpus']}: measured best tile {s['measured_best_tile']} "
                   f"({s['measured_best_seconds']:.3f} s); model refined {s['predicted_tile_refined']} "
                   f"(time error {s.get('time_error_refined', float('nan')):+.0%}), paper "
                   f"{s['predicted_tile_paper']}")


@main.command("bench-expm")
@click.option("--n", "sizes", type=int, multiple=True, default=[8192, 16384], show_default=True)
@click.option("--gpus", "gpus", type=int, multiple=True, default=[1, 2, 4], show_default=True)
@click.option("--method", "methods", multiple=True, default=["auto"], show_default=True,
              type=click.Choice(["auto", "taylor"]))
@click.option("--repeat", type=int, default=3, show_default=True)
@click.option("--no-baselines", is_flag=True)
@click.option("--json-out", type=click.Path(dir_okay=False), default=None)
@click.option("--plan", "plan_only", is_flag=True,
              help="time nothing: per G the largest N that fits a GPU's memory, and per N the "
                   "GiB a GPU needs (no GPU needed with --memory)")
@click.option("--memory", type=click.FloatRange(0, None, min_open=True), default=None,
              help="GiB free on each GPU for --plan (default: GPU 0's free memory); mgemm's "
                   "reserve is taken from it, as expm does")
def bench_expm(sizes, gpus, methods, repeat, no_baselines, json_out, plan_only, memory):
    """Time mgemm.expm on 1..G GPUs against torch, jax and cupyx on one GPU; with --plan,
    the sizes that fit instead."""
    if plan_only:
        _plan_expm(sizes, gpus, methods, memory, json_out)
        return
    if memory is not None:
        raise click.UsageError("--memory goes with --plan")
    _need_gpus("bench-expm", gpus)
    from .tools.bench_expm import run_bench_expm
    save = (lambda rows: _save(json_out, "expm-gpu", "mgemm bench-expm", rows)) if json_out else None
    rows = run_bench_expm(list(sizes), list(gpus), list(methods), repeat, not no_baselines,
                          progress=lambda s: click.echo(s, err=True), checkpoint=save)
    if save:
        save(rows)
    click.echo(f"{'N':>6} {'engine':28} {'G':>2} {'seconds':>8} {'rel.err':>8} {'speedup':>7}")
    for r in rows:
        if "seconds" in r:
            click.echo(f"{r['n']:6d} {r['engine']:28} {r['gpus']:2d} {r['seconds']:8.3f} "
                       f"{r['rel_error']:8.1e} {r.get('speedup_vs_fastest_library', float('nan')):7.2f}")


def _plan_expm(sizes, gpus, methods, memory, json_out):
    """``bench-expm --plan``: :func:`mgemm.tools.bench_expm.plan_rows`, a table a method."""
    from .tools.bench_expm import NORM1, plan_rows
    if memory is None:
        _need_gpus("bench-expm --plan (or give --memory GIB)", ())
        import cupy as cp

        from .expm import free_bytes, usable
        free = usable(free_bytes(cp, 0))
    else:
        from .expm import usable
        free = usable(int(memory * 2 ** 30))
    rows = plan_rows(list(sizes), list(gpus), list(methods), free)
    if json_out:
        _save(json_out, "expm-plan", "mgemm bench-expm", rows)
    for method in dict.fromkeys(methods):
        mine = [r for r in rows if r["method"] == method]
        p, q = mine[0]["plan"], mine[0]["leanest_plan"]
        click.echo(f"{method}: ||A||_1 = {NORM1:g}, complex128 ({p['path']} path), degree {p['degree']}, "
                   f"{p['squarings']} squarings, {p['ps_block']} stored powers, {p['products']} products; "
                   f"leanest fallback {q['ps_block']} stored powers, {q['products']} products; "
                   f"{free / 2 ** 30:.1f} GiB a GPU")
        click.echo("largest N: with the plan, (with the leanest); per N the GiB a GPU holds with "
                   "the plan expm runs there (qK: K stored powers), or what the leanest needs")
        click.echo(f"{'G':>3} {'largest N':>10} {'(leanest)':>10}  " + "  ".join(f"{'N = ' + str(n):>17}"
                                                                         for n in sizes))
        for r in mine:
            cells = []
            for n in sizes:
                c = r["sizes"][str(n)]
                cells.append(f"{c['bytes_per_gpu_run'] / 2 ** 30:10.1f} GiB q{c['stored_powers_run']}"
                             if c["fits"] else f"{'refused: ' + format(c['bytes_per_gpu_leanest'] / 2 ** 30, '.0f'):>17}")
            click.echo(f"{r['gpus']:3d} {r['largest_n']:10d} {r['largest_n_leanest']:10d}  " + "  ".join(cells))


def _save(path, kind, command, rows, **extra):
    import sys

    from .tools.common import save_result
    save_result(path, kind, command + " " + " ".join(sys.argv[2:]), rows, **extra)


if __name__ == "__main__":
    main()
