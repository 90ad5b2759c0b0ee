"""Thin CLI: TOML -> Config -> run(config) -> HDF5 + plots (STYLE.md item 10).

Every input problem is one line on stderr naming the key and value, exit code 2."""
from __future__ import annotations

import json
import os
import platform
import sys

from ..run.interrupts import accept_sigint
accept_sigint(program=__name__ == "__main__")  # before the imports (`tdse`: ui/command.py)
from ..lazy import defer  # noqa: E402 -- NumPy's unused submodules loaded if used
defer()
import click

from ..config import ConfigError, load
from .files import InputError, check_out, fresh_outputs, save_outputs, storage_exit
from .lines import error_summary, header, process_seconds, yield_lines
from ..version import __version__


def _load(path):
    try:
        return load(path)
    except ConfigError as e:
        raise InputError(f"{path}: {e}") from None


def _devices(value):
    try:
        return [int(v) for v in value.split(",")] if value else None
    except ValueError:
        raise InputError(f"--devices = {value!r}: must be comma-separated GPU ids, e.g. 0,1,2,3") from None


class _Group(click.Group):
    """The tdse command group: SIGINT / SIGTERM at any moment of a command (its imports, the
    set-up, the loop) end it with one line and exit code 130 / 143, not click's "Aborted!"
    and 1 (a run in its loop says more: tdse.run.interrupts)."""

    def invoke(self, ctx):
        return _interruptible(lambda: super(_Group, self).invoke(ctx), "")


def _interruptible(work, what):
    """Run ``work()`` with SIGINT/SIGTERM as KeyboardInterrupt; on one, say so (``what``
    after the signal's name) and exit 130 / 143."""
    from ..run.interrupts import acknowledge, check_pending, signal_guard
    restore = signal_guard()
    try:
        check_pending()         # one noted during the imports (accept_sigint)
        return work()
    except KeyboardInterrupt as e:
        acknowledge()
        sig = "SIGTERM" if str(e) == "SIGTERM" else "SIGINT"
        # a command may say what it kept (KeyboardInterrupt.kept, e.g. a scan's batches)
        click.echo(f"error: interrupted by {sig}{getattr(e, 'kept', what)}", err=True)
        sys.exit(143 if sig == "SIGTERM" else 130)
    finally:
        restore()


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="tdse")
def main():
    """1D H2+ time-dependent Schrodinger equation with the mgemm matrix exponent.

    Atomic units throughout (hbar = m_e = e = 1)."""


#: refuse a CPU run estimated to take longer than this unless --yes
CPU_LIMIT_HOURS = 1.0


def _run_options(f):
    """Options shared by `tdse run` and `tdse resume`."""
    opts = [
        click.option("--backend", type=click.Choice(["auto", "numpy", "cupy"]), default="auto",
                     show_default=True,
                     help="auto: with GPUs, the faster of GPU and CPU on this run's own steps, timed"),
        click.option("--devices", default=None, help="GPU ids for --backend cupy, e.g. 0,1,2,3"),
        click.option("--force", is_flag=True, help="overwrite an existing OUT/<name>.h5"),
        click.option("--allow-inaccurate", is_flag=True,
                     help="run although the exponential misses its tolerance (precheck)"),
        click.option("--threads", type=int, default=None,
                     help="BLAS threads of the host (a GPU run's host work too; default: one for Chebyshev, else by matrix size and free CPUs, at most OMP_NUM_THREADS)"),
        click.option("--yes", is_flag=True,
                     help=f"run even if the CPU estimate exceeds {CPU_LIMIT_HOURS:g} h"),
        click.option("--quiet", "-q", is_flag=True, help="no progress bar, notes or plots list"),
        click.option("--plots/--no-plots", default=False, show_default=True,
                     help="draw the run's pictures when it ends (a few seconds on a CPU); "
                          "`tdse plot FILE.h5` draws them any time"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


@main.command()
@click.argument("input_file", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", default="outputs", show_default=True, help="results folder")
@click.option("--resume", "resume_file", default=None, metavar="FILE.h5",
              help="continue an interrupted run (same as `tdse resume FILE.h5`)")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="set an input key over the file's value (repeatable), e.g. time.dt=0.02, "
                   "grid.stencil=dvr, run.graphs=false (`tdse keys` lists them)")
@click.option("--continue", "continue_file", default=None, metavar="RUN.h5",
              help="extend the finished RUN.h5 of INPUT to --t-end in OUT/<name>_to_<T>.h5")
@click.option("--t-end", type=float, default=None, help="with --continue: the new end time (hbar/E_h)")
@_run_options
def run(input_file, out_dir, resume_file, sets, continue_file, t_end, **opts):
    """Propagate INPUT and write OUT/<name>.h5 and its plots."""
    if resume_file or continue_file or t_end is not None:
        if (sets and not resume_file) or (continue_file is None) != (t_end is None) or (resume_file and continue_file):
            raise InputError("--resume FILE, or --continue RUN.h5 with --t-end T, --set only with "
                             "--resume (adaptive steps' control): the run continues with the file's own input")
        if resume_file:
            return _resume(resume_file, input_file, sets, **opts)
        from ..run.extend import extension
        try:
            cfg, state, work = extension(continue_file, _load(input_file), t_end, out_dir, opts["force"])
        except ConfigError as e:
            raise InputError(str(e)) from None
        return _go(cfg, work, out_dir, (state, work), **opts)
    cfg = _load(input_file)
    if sets:
        from ..config import parse_assignment, with_values
        try:
            cfg = with_values(cfg, [parse_assignment(s) for s in sets])
        except ConfigError as e:
            raise InputError(f"{input_file}: {e}") from None
    check_out(out_dir)   # made only when the run starts: a refusal leaves no empty folder
    if cfg.nuclei is not None:          # the 1D + 1D H2+ model: its own run and pictures
        from .nuclei import run_nuclei
        return run_nuclei(cfg, out_dir, InputError, **opts)
    _go(cfg, input_file, out_dir, None, **opts)


@main.command()
@click.argument("h5file", metavar="FILE.h5", type=click.Path(dir_okay=False))
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="adaptive steps only: time.tolerance or time.dt_min from here on")
@_run_options
def resume(h5file, sets, **opts):
    """Continue an interrupted run from its last whole snapshot (input read from the file)."""
    _resume(h5file, None, sets, **opts)


def _resume(h5file, input_file, sets, **opts):
    from ..run.extend import resume_input
    try:
        cfg, state = resume_input(h5file, input_file and _load(input_file), input_file, sets)
    except ConfigError as e:
        raise InputError(str(e)) from None
    _go(cfg, h5file, os.path.dirname(os.path.abspath(h5file)), (state, h5file), **opts)


def _go(cfg, label, out_dir, resume_arg, **opts):
    """A run from the command line: SIGINT/SIGTERM at any moment end it with 130/143."""
    from ..run.eigenpairs import look_ahead   # the workers start before the solvers are imported (no fork server: one run)
    with look_ahead(cfg, opts["backend"], opts["threads"], prime=resume_arg is None, serve=False) as workers:
        _interruptible(lambda: _start(cfg, label, out_dir, resume_arg, workers=workers, **opts),
                       " during start-up: nothing was written")


def _start(cfg, label, out_dir, resume_arg, *, backend, devices, force, allow_inaccurate,
           threads, yes, quiet, plots, workers=None):
    import warnings

    from ..run.driver import run as run_
    from ..run.interrupts import Interrupted
    from ..numerics.adaptive import StepTooSmall
    from ..run.snapshots import OutputExists, StorageError, part_path
    out = (lambda m, err=False: None) if quiet else (lambda m, err=False: click.echo(m, err=err))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        existing = os.path.getsize(resume_arg[1]) if resume_arg else 0
        plan = _plan(cfg, label, out_dir, backend, devices, threads, allow_inaccurate, yes, existing)
        header(plan, resume_arg, out)
        t_run = process_seconds()
        try:
            res = run_(plan, out_dir, force=force, progress=not quiet, resume=resume_arg,
                       allow_inaccurate=allow_inaccurate, workers=workers)
        except ConfigError as e:   # (after StepTooSmall: how to go on with another control)
            work = resume_arg[1] if resume_arg else part_path(os.path.join(out_dir, f"{cfg.name}.h5"))
            more = f"; `tdse resume {work} --set time.tolerance=...` continues the run kept so far"
            raise InputError(f"{e}{more if isinstance(e, StepTooSmall) and os.path.exists(work) else ''}") from None
        except OutputExists as e:
            p = e.args[0]
            hint = f" (an interrupted run: continue it with `tdse resume {p}`)" if p.endswith(".part") else ""
            raise InputError(f"output {p!r} exists{hint}; pass --force to overwrite it") from None
        except Interrupted as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(143 if e.signame == "SIGTERM" else 130)
        except StorageError as e:
            storage_exit(e)
        except MemoryError as e:   # the exponent (mgemm.ExpmMemoryError) or the device refused
            raise InputError(f"{e} (the snapshots written so far are kept; a coarser grid, "
                             f"more GPUs or method = \"chebyshev\" need less)") from None
    for w in caught:
        out(f"warning: {w.message}", err=True)
    out(f"wrote {res.path} ({res.snapshots} snapshots, {res.steps} steps, "
        f"{res.seconds:.1f} s, backend {res.backend})")
    for note in res.notes:
        out(f"note: {note}", err=True)
    for line in error_summary(plan.config, plan.precheck, res.time_error) + yield_lines(plan.config, res):
        out(line)
    t_plots = process_seconds()
    if plots:
        from .plots import plot_run
        for p in plot_run(res.path, out_dir, force=True):   # the run's own, drawn anew
            out(f"wrote {p}")
    wall = process_seconds()
    out(f"wall {wall:.1f} s: {t_run:.1f} s before the run (start-up, the input, H(0), the "
        f"precheck, auto's choice), {t_plots - t_run:.1f} s the run and its file, " +
        (f"{wall - t_plots:.1f} s the pictures" if plots else
         f"no pictures (`tdse plot {res.path}` draws them, or --plots)"))


def _plan(cfg, label, out_dir, backend, devices, threads, allow_inaccurate, yes, existing=0):
    """The set-up, once (disk, precheck, backend, threads, auto's choice, H(0)), and the
    CPU-time refusal: one-line errors, nothing written."""
    from ..run.plan import prepare
    from ..run.resources import check_disk, cpu_seconds_estimate
    try:
        check_disk(cfg, out_dir, existing=existing)
        plan = prepare(cfg, backend=backend, devices=_devices(devices), threads=threads,
                       allow_inaccurate=allow_inaccurate)
    except ConfigError as e:  # a refusal is one line, nothing before it
        raise InputError(f"{label}: {e}") from None
    cfg, pc = plan.config, plan.precheck
    if plan.backend.name == "numpy" and not yes:
        est = cpu_seconds_estimate(cfg, pc, plan.backend.threads)
        if est > 3600 * CPU_LIMIT_HOURS:
            raise InputError(f"{label}: estimated {est / 3600:.1f} h on this CPU (N = {cfg.grid.n}, "
                             f"{cfg.time.steps} steps, {plan.backend.threads} BLAS thread(s)); pass "
                             f"--yes to run anyway, or --backend cupy to use GPUs")
    return plan


@main.command()
@click.argument("input_file", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option("--count", "-k", default=5, show_default=True, type=click.IntRange(1, None))
@click.option("--json", "as_json", is_flag=True)
def states(input_file, count, as_json):
    """Print the lowest eigenvalues of H(0) (hartree)."""
    from ..model.states import eigenstates
    cfg = _load(input_file)
    if cfg.nuclei is not None:
        raise InputError(f"{input_file}: [nuclei]: the 1D + 1D model's levels are tdse.model.nuclei.eigenstates")
    if count > cfg.grid.n:
        raise InputError(f"--count = {count}: the grid has only {cfg.grid.n} points")
    E, _ = eigenstates(cfg, 0.0, count)
    if as_json:
        click.echo(json.dumps({"energies": [float(e) for e in E], "units": "hartree"}))
    else:
        click.echo(f"# {cfg.name}: lowest eigenvalues of the molecular H(0) ({cfg.grid.stencil}"
                   f"{'-point' if cfg.grid.stencil != 'dvr' else ''}, N = {cfg.grid.n}, "
                   f"dx = {cfg.grid.dx:g} bohr); atomic units")
        click.echo(f"{'n':>4}  {'E_n (hartree)':>18}  {'E_n - E_0 (hartree)':>20}")
        for n, e in enumerate(E):
            click.echo(f"{n:4d}  {e:18.12f}  {e - E[0]:20.12f}")


@main.command()
@click.argument("input_file", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option("--levels", default=3, show_default=True, type=click.IntRange(2, 6),
              help="refinements: dx, dx/2, ... and dt, dt/2, ...")
@click.option("--target", default=1e-3, show_default=True, type=float,
              help="error allowed in every population")
@click.option("--stencils", default=None, help="comma-separated, e.g. 3,5,dvr (default: the input's)")
@click.option("--samples", default=10, show_default=True, type=click.IntRange(1, 1000),
              help="times compared, equally spaced up to t_end")
@click.option("--box", default=1.5, show_default=True, type=float, help="box scale of the box check (0: none)")
@click.option("--out", "out_dir", default="outputs", show_default=True)
@click.option("--force", is_flag=True, help="overwrite the outputs")
@click.option("--json", "as_json", is_flag=True, help="print the JSON instead of the table")
@click.option("--backend", type=click.Choice(["numpy", "cupy"]), default="numpy", show_default=True,
              help="where each run steps (cupy: one GPU; measured on the host at the sample times)")
def converge(input_file, levels, target, stencils, samples, box, out_dir, force, as_json, backend):
    """Convergence in dx, dt and box: observed orders, estimated errors, the coarsest
    numerics meeting --target (table, OUT/<name>_converge.json and .png)."""
    cfg = _load(input_file)
    if not 0 < target < float("inf"):
        raise InputError(f"--target = {target!r}: must be a finite number > 0")
    if box != 0 and not 1 <= box < float("inf"):
        raise InputError(f"--box = {box!r}: must be a finite number >= 1 (or 0 for no box check)")
    st = None
    if stencils:
        st = []
        for v in stencils.split(","):
            v = v.strip()
            if v not in ("3", "5", "dvr"):
                raise InputError(f"--stencils = {stencils!r}: each must be 3, 5 or dvr")
            st.append(int(v) if v in ("3", "5") else v)
    base = os.path.join(out_dir, f"{cfg.name}_converge")
    fresh_outputs(out_dir, base, force)
    from ..studies.converge import study, table      # (after the checks: matplotlib's 1.5 s)
    from .plots import plot_converge
    try:
        doc = study(cfg, levels=levels, target=target, stencils=st, samples=samples, box=box,
                    progress=None if as_json else (lambda m: click.echo(m, err=True)),
                    backend=backend)
    except ConfigError as e:
        raise InputError(f"{input_file}: {e}") from None
    if save_outputs(base, doc, plot_converge, as_json):
        return
    for line in table(doc):
        click.echo(line)
    click.echo(f"wrote {base}.json, {base}.png")


@main.command()
@click.argument("h5file", metavar="FILE.h5", type=click.Path(dir_okay=False))
@click.option("--kind", type=click.Choice(["hhg", "autocorrelation", "photoelectron"]), default="hhg",
              show_default=True, help="hhg: |FFT of the dipole acceleration|^2 vs harmonic order; "
              "autocorrelation: spectrum of <psi(0)|psi(t)> (peaks at the eigenenergies); "
              "photoelectron: dP/dE by the window operator or t-SURFF (--method)")
@click.option("--method", type=click.Choice(["window", "tsurff"]), default="window", show_default=True,
              help="photoelectron: the window on the last psi, or the run's t-SURFF flux ([output] tsurff_radius)")
@click.option("--gamma", type=click.FloatRange(min=0, min_open=True), default=None,
              help="photoelectron: the window's resolution (hartree; default omega/8)")
@click.option("--window", "win", type=click.Choice(["hann", "blackman", "none"]), default="hann", show_default=True)
@click.option("--out", "out_dir", default=None, help="folder for PNG + JSON (default: beside FILE)")
@click.option("--force", is_flag=True, help="overwrite the outputs")
def spectrum(h5file, kind, method, gamma, win, out_dir, force):
    """Harmonic, autocorrelation or photoelectron spectrum of a run (PNG + JSON)."""
    from ..run.snapshots import NotOurFile, read
    try:   # the outputs beside FILE as named (paths printed as given), checked before the work
        d = read(h5file)
        out_dir = out_dir or os.path.dirname(h5file) or "."
        base = os.path.join(out_dir, f"{d['attrs'].get('name')}_spectrum_{kind}" + ("_tsurff" if method == "tsurff" and kind == "photoelectron" else ""))
        fresh_outputs(out_dir, base, force)      # (and before matplotlib's import)
        from ..studies.spectra import from_file
        from .spectrum_plots import plot_spectrum
        res = from_file(d, kind, win, gamma, method)
    except (NotOurFile, ValueError, KeyError) as e:
        raise InputError(str(e)) from None
    save_outputs(base, res, plot_spectrum, False)
    if kind == "autocorrelation":
        click.echo(f"the {len(res['peaks'])} strongest peaks (hartree, resolution {res['resolution']:.3g}; "
                   "all inside the picture): " + ", ".join(f"{e:.4f}" for e in res["peaks"]))
    click.echo(f"wrote {base}.json, {base}.png")


@main.command()
@click.argument("h5file", metavar="FILE.h5", type=click.Path(dir_okay=False))
@click.option("--out", "out_file", default=None, help="FILE.gif (pillow) or FILE.mp4 (ffmpeg); "
              "default <name>.gif beside FILE")
@click.option("--fps", type=click.IntRange(1, 120), default=15, show_default=True)
@click.option("--force", is_flag=True, help="overwrite the output")
def animate(h5file, out_file, fps, force):
    """Animation of |psi|^2 and V(x, t) over the snapshots."""
    from ..run.snapshots import NotOurFile
    if out_file is None:
        base = os.path.splitext(os.path.basename(h5file))[0]
        out_file = os.path.join(os.path.dirname(h5file) or ".", base + ".gif")
    if os.path.exists(out_file) and not force:
        raise InputError(f"output {out_file!r} exists; pass --force to overwrite it")
    folder = os.path.dirname(os.path.abspath(out_file))
    check_out(folder, "--out")
    os.makedirs(folder, exist_ok=True)
    from .plots import animate as animate_      # (after the checks: matplotlib's 1.5 s)
    try:
        click.echo(f"wrote {animate_(h5file, out_file, fps)}")
    except (NotOurFile, ValueError, KeyError) as e:
        raise InputError(str(e)) from None


@main.command()
@click.option("--json", "as_json", is_flag=True)
@click.option("--quick", is_flag=True, help="a smaller grid of expm cases")
def validate(as_json, quick):
    """Check mgemm.expm and the propagator against SciPy and analytic cases."""
    from ..studies.validate import run_all, summary_rows
    res = run_all(quick=quick, progress=not as_json)
    if as_json:
        click.echo(json.dumps(res, indent=1))
    else:
        rows = summary_rows(res)
        w = max(len(r[0]) for r in rows)
        click.echo(f"{'check':{w}s} {'cases':>5s} {'worst err/tol':>14s}  result")
        for name, count, worst, ok in rows:
            click.echo(f"{name:{w}s} {count:5d} {worst:14.3g}  {'pass' if ok else 'FAIL'}")
        click.echo("all passed" if res["passed"] else "FAILED")
    if not res["passed"]:
        sys.exit(1)


@main.command()
@click.argument("h5file", metavar="FILE.h5", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", default=None, help="folder for the PNGs (default: beside FILE)")
@click.option("--force", is_flag=True, help="overwrite existing pictures")
@click.option("--linear", is_flag=True, help="the spacetime map in linear colour (default: log, "
              "from 1e-6 of the peak: excitation and ionised flux show)")
def plot(h5file, out_dir, force, linear):
    """Draw the pictures of a run file, or the map of a scan's file."""
    from .scan_plots import plot_any
    from ..run.snapshots import NotOurFile
    check_out(out_dir or os.path.dirname(os.path.abspath(h5file)))     # (where the pictures go)
    try:
        files = plot_any(h5file, out_dir, force=force, log=not linear)
    except FileExistsError as e:
        raise InputError(f"output {e.filename!r} exists; pass --force to overwrite it") from None
    except (NotOurFile, ValueError, KeyError) as e:
        raise InputError(str(e)) from None
    click.echo("\n".join(f"wrote {p}" for p in files))


@main.command()
@click.argument("input_file", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option("--period", type=float, default=None,
              help="period T (default 2 pi / beta of the moving centres; needed when static)")
@click.option("--steps", type=int, default=None,
              help="steps per period M (dt = T/M); default: the whole number nearest T/time.dt")
@click.option("--count", "-k", default=None, type=click.IntRange(1, None),
              help="lowest eigenstates of H(0) to match (default 8; with --scan 4)")
@click.option("--out", "out_dir", default="outputs", show_default=True)
@click.option("--backend", type=click.Choice(["auto", "numpy", "cupy"]), default="auto", show_default=True)
@click.option("--devices", default=None, help="GPU ids for --backend cupy, e.g. 0,1,2,3")
@click.option("--force", is_flag=True, help="overwrite the outputs")
@click.option("--allow-inaccurate", is_flag=True, help="run although the exponential misses its tolerance")
@click.option("--scan", default=None, metavar="KEY=a:b:n",
              help="quasi-energies at n values of an input key from a to b, e.g. "
                   "potential.centres.frequency=2:4:21 (a map PNG + JSON)")
@click.option("--json", "as_json", is_flag=True)
def floquet(input_file, period, steps, count, out_dir, backend, devices, force, allow_inaccurate,
            scan, as_json):
    """One-period propagator U(T): quasi-energies and overlaps with H(0)'s eigenstates
    (with --scan: over a grid of one input key's values)."""
    cfg = _load(input_file)
    if scan is not None:
        return _floquet_scan(cfg, input_file, scan, period=period, steps=steps, count=count or 4,
                             out_dir=out_dir, backend=backend, devices=devices, force=force,
                             allow_inaccurate=allow_inaccurate, as_json=as_json)
    base = os.path.join(out_dir, f"{cfg.name}_floquet")
    fresh_outputs(out_dir, base, force)      # (before the imports: matplotlib's 1.5 s, 2 CPUs)
    from ..studies.floquet import analyse
    from .floquet_table import floquet_table
    from .plots import plot_floquet
    try:
        res = analyse(cfg, period=period, steps=steps, count=count or 8, backend=backend,
                      devices=_devices(devices), allow_inaccurate=allow_inaccurate,
                      progress=not as_json)
    except ConfigError as e:
        raise InputError(f"{input_file}: {e}") from None
    if save_outputs(base, res, plot_floquet, as_json, shown={k: v for k, v in res.items() if k != "overlaps"}):
        return
    floquet_table(res, click.echo)
    click.echo(f"wrote {base}.json, {base}.png")


def parse_scan(text: str):
    """'KEY=a:b:n' -> (KEY, n values from a to b); InputError (one line) otherwise."""
    import numpy as np
    usage = "must be KEY=a:b:n, e.g. potential.centres.frequency=2:4:21 (n >= 2 values from a to b)"
    key, eq, rng = text.partition("=")
    parts = rng.split(":")
    try:
        if not eq or not key.strip() or len(parts) != 3:
            raise ValueError
        a, b, n = float(parts[0]), float(parts[1]), int(parts[2])
        if not (np.isfinite(a) and np.isfinite(b)) or n < 2 or n > 10_000:
            raise ValueError
    except ValueError:
        raise InputError(f"--scan = {text!r}: {usage}") from None
    return key.strip(), np.linspace(a, b, n)


def _floquet_scan(cfg, input_file, text, *, period, steps, count, out_dir, backend, devices,
                  force, allow_inaccurate, as_json):
    from ..studies.floquet import scan
    from .floquet_table import floquet_scan_table
    from .plots import plot_scan
    key, values = parse_scan(text)
    base = os.path.join(out_dir, f"{cfg.name}_floquet_scan")
    fresh_outputs(out_dir, base, force)
    try:
        res = scan(cfg, key, values, period=period, steps=steps, count=count,
                   backend=backend, devices=_devices(devices), allow_inaccurate=allow_inaccurate,
                   progress=not as_json)
    except ConfigError as e:
        raise InputError(f"{input_file}: --scan: {e}") from None
    if save_outputs(base, res, plot_scan, as_json):
        return
    floquet_scan_table(res, key, len(values), click.echo)
    click.echo(f"wrote {base}.json, {base}.png")


@main.command()
@click.argument("input_file", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option("--set", "sets", multiple=True, required=True, metavar="KEY=a:b:n",
              help="an input key over n values from a to b (or KEY=v1,v2,...); repeat for a grid")
@click.option("--zip", "zipped", is_flag=True, help="pair the --set lists member by member (no grid)")
@click.option("--out", "out_dir", default="outputs", show_default=True)
@click.option("--workers", type=click.IntRange(1, None), default=None,
              help="a Dask LocalCluster of N worker processes (default: this process)")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="a running Dask scheduler, e.g. tcp://host:8786 (docs/SCANS.md)")
@click.option("--backend", type=click.Choice(["auto", "numpy", "cupy"]), default="numpy", show_default=True)
@click.option("--batch", type=click.IntRange(1, None), default=None,
              help="members per batch at most (default: what the memory holds, <= 1024)")
@click.option("--keep-psi", is_flag=True, help="also store each member's final psi")
@click.option("--save", default="final", show_default=True, metavar="final|series[:NAME,...]",
              help="each observable at t_end (and HHG spectra); series: all over time too, or the named")
@click.option("--force", is_flag=True, help="overwrite the outputs")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
@click.option("--plots/--no-plots", default=False, show_default=True, help="draw the map PNG when "
              "the scan ends (as `tdse run`'s); `tdse plot OUT/<name>_scan.h5` draws it any time")
def scan(input_file, sets, zipped, out_dir, workers, scheduler, backend, batch, keep_psi, save, force, quiet, plots):
    """INPUT over a grid of parameter values, many runs at once: OUT/<name>_scan.h5 (xarray
    reads it), and with --plots its map PNG."""
    from ..run.scanfile import final, write
    from ..run.resources import check_space
    from ..studies.scan import members, parse_set, remove_parts, scan as scan_, scan_bytes, spectra
    from ..studies.scan_save import parse_save
    cfg = _load(input_file)
    try:
        parsed, series = [parse_set(s) for s in sets], parse_save(save)
        sc = members(cfg, parsed, zipped)     # every value checked before any work
    except ConfigError as e:
        raise InputError(f"{input_file}: {e}") from None
    base = os.path.join(out_dir, f"{cfg.name}_scan")
    fresh_outputs(out_dir, base, force, exts=(".h5", ".png") if plots else (".h5",), room=0)  # size below
    if cfg.nuclei is not None:          # the 1D + 1D H2+ model's scan (tdse.ui.nuclei)
        from .nuclei import scan_nuclei
        if save != "final":
            raise InputError(f"--save = {save!r}: a 1D + 1D scan keeps its own quantities (docs/NUCLEI.md)")
        return scan_nuclei(cfg, parsed, zipped, base, backend, batch, quiet, InputError, workers, scheduler, keep_psi, plots)
    try:                                      # #58 item 2: the space it needs, before any work
        check_space(out_dir, scan_bytes(sc, keep_psi, series), "the scan (its file, and its parts folder while it runs)")
    except ConfigError as e:
        raise InputError(str(e)) from None
    try:
        res = scan_(cfg, sc, zipped=zipped, out=out_dir, workers=workers, scheduler=scheduler,
                    backend=backend, batch=batch, keep_psi=keep_psi, progress=not quiet, save=save)
    except ConfigError as e:
        raise InputError(f"{input_file}: {e}") from None
    except KeyboardInterrupt as e:       # #58 item 6: say what was kept and how to go on
        from ..studies.scan import parts_kept
        folder, kept = parts_kept(out_dir, cfg.name)
        e.kept = (f": {kept} finished batch(es) kept in {folder}; the same command continues "
                  f"from them" if kept else ": no batch had finished; nothing was kept")
        raise
    write(base + ".h5", res, spectra(res))
    remove_parts(out_dir, cfg.name)      # the file holds every batch now
    if plots:
        from .scan_plots import plot_scan_map
        plot_scan_map(base + ".h5", base + ".png")
    click.echo(f"{len(sc.configs)} members in {res['batches']} batch(es), {res['seconds']:.1f} s "
               f"({res['seconds'] / len(sc.configs):.3g} s a member); wrote {base}.h5"
               + (f", {base}.png" if plots else f" (its map: `tdse plot {base}.h5`, or --plots)"))
    if "time_error" in res:              # time_error = "estimate": each member's, at t_end
        te = final(res, "time_error")
        ok = te[te == te]                # (a member with NaN rows states none: counted apart)
        span = f"{ok.min():.2g} to {ok.max():.2g}" if ok.size else "none finite"
        nan = f", {te.size - ok.size} member(s) NaN" if ok.size < te.size else ""
        click.echo(f"time-discretisation error of psi at t_end (the estimate, each member's in "
                   f"/time_error): {span}{nan}; steps taken "
                   f"{min(res['batch_steps_taken'])}-{max(res['batch_steps_taken'])} a batch")


@main.command()
@click.option("--markdown", is_flag=True, help="the input reference as markdown (docs/INPUT.md)")
def keys(markdown):
    """Every input key with its type, unit, default and meaning."""
    from ..config import KEYS, input_reference
    if markdown:
        click.echo(input_reference(), nl=False)
        return
    for k in KEYS:
        unit = f" [{k.unit}]" if k.unit else ""
        click.echo(f"{k.name}{unit} ({k.type}, default {k.default}): {k.meaning}")


@main.command()
def info():
    """Versions, backends and GPUs found."""
    import h5py, numpy, scipy  # noqa: E401
    import mgemm
    from mgemm.arrays import cupy_or_none, gpu_count
    from mgemm.executors import REGISTRY
    cp = cupy_or_none()
    click.echo(f"tdse {__version__}, mgemm {mgemm.__version__}, Python {platform.python_version()}")
    click.echo(f"numpy {numpy.__version__}, scipy {scipy.__version__}, h5py {h5py.__version__}")
    click.echo(f"cupy: {cp.__version__ if cp else 'not installed'}")
    click.echo(f"mgemm executors: {', '.join(sorted(REGISTRY))}")
    n = gpu_count()
    click.echo(f"GPUs: {n}")
    for d in range(n):
        props = cp.cuda.runtime.getDeviceProperties(d)
        click.echo(f"  {d}: {props['name'].decode()} {props['totalGlobalMem'] / 2**30:.0f} GiB")
    click.echo("units: atomic units (hbar = m_e = e = 1)")


if __name__ == "__main__":
    main()
