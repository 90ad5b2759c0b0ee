"""``mgemm`` command line: plan, bench (thin wrappers)."""
from __future__ import annotations

import json

import click


@click.group()
def main():
    """Band-based asynchronous multi-GPU GEMM (Choi, Nikolskiy & Stegailov)."""


@main.command()
@click.option("--n", "n", type=click.IntRange(1, None), required=True)
@click.option("--gpus", type=click.IntRange(1, None), default=4, show_default=True)
@click.option("--tile", type=click.IntRange(1, None), default=None)
@click.option("--placement", type=click.Choice(["one", "three"]), default="three", show_default=True)
@click.option("--explain", is_flag=True, help="list every op")
def plan(n, gpus, tile, placement, explain):
    """Print the band schedule for an N x N x N product (no GPU needed)."""
    from .executors._common import resolve_tile, roles
    from .schedule import plan_gemm
    a, b, c = roles(placement, list(range(gpus)))
    s = plan_gemm(n, n, n, workers=list(range(gpus)), a_dev=a, b_dev=b, c_dev=c,
                  tile=resolve_tile(tile, n, n, gpus), beta_zero=True)
    click.echo(s.explain())
    if explain:
        for op in s.ops:
            deps = ",".join(f"#{d}" for d in op.deps)
            click.echo(f"{op}  deps[{deps}]")


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
@click.option("--timeline", type=click.Path(dir_okay=False), default=None)
@click.option("--json-out", type=click.Path(dir_okay=False), default=None)
def bench(sizes, dtype, gpus, placements, tiles, cms, repeat, no_xt, timeline, json_out):
    """Time mgemm against single-GPU cuBLAS and cuBLAS-XT on the GPUs present."""
    from .bench import run_bench
    rows = run_bench(list(sizes), dtype, list(gpus), list(placements), list(tiles), list(cms),
                     repeat, () if no_xt else (2048, 4096, 8192), timeline,
                     progress=lambda s: click.echo(s, err=True))
    if json_out:
        import os
        import sys
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
        from common import machine
        import datetime as dt
        doc = {"kind": "gemm", "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
               "command": "mgemm bench " + " ".join(sys.argv[2:]), "machine": machine(), "rows": rows}
        with open(json_out, "w") as f:
            json.dump(doc, f, indent=1)
    click.echo(f"{'N':>6} {'engine':10} {'G':>2} {'place':6} {'tile':>5} {'cm':6} {'TFLOP/s':>8} {'frac':>6}")
    for r in rows:
        if "tflops" in r:
            click.echo(f"{r['n']:6d} {r['engine']:10} {r['gpus']:2d} {r.get('placement', ''):6} "
                       f"{str(r.get('tile', '')):>5} {r.get('complex_method', ''):6} "
                       f"{r['tflops']:8.2f} {r['fraction']:6.3f}")


if __name__ == "__main__":
    main()
