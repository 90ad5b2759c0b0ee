"""The Python API for notebooks (atomic units): :func:`load_config`, :func:`simulate`, and
the two pieces every run is made of, :func:`prepare` and :func:`evolve` (docs/PYTHON.md).

    import tdse
    cfg = tdse.load_config("inputs/h2plus_moving.toml")        # or a dict of sections
    cfg = dataclasses.replace(cfg, time=dataclasses.replace(cfg.time, t_end=2.0))
    res = tdse.simulate(cfg)                                    # nothing written
    res.t, res.observables["populations_ht"], res.psi           # NumPy arrays
    res = tdse.simulate(cfg, out="runs")                        # also runs/<name>.h5

    plan = tdse.prepare(cfg, backend="numpy")                   # set-up, once (frozen)
    final = tdse.evolve(plan, plan.psi0)                        # psi(t_end), no sinks
    block = tdse.evolve(plan, np.stack([plan.psi0, psi1], 1))   # N x B: B states at once

A run file records the *effective* configuration (every key with its value, ``method =
"auto"`` replaced by the method it chose), so a run started here with a changed config is
what ``tdse resume`` continues; ``Result.config`` is that configuration.
"""
from __future__ import annotations

from .config import Config, ConfigError, load_config
from .run.driver import Result, run
from .run.eigenpairs import look_ahead
from .run import loop
from .run.loop import Observer, Sink, State
from .run.plan import RunPlan, prepare, with_options

__all__ = ["load_config", "simulate", "Result", "prepare", "evolve", "RunPlan", "Sink",
           "Observer", "State", "scan", "extend", "photoelectron_spectrum", "with_potential"]


def evolve(plan, psi0, sinks=(), **kw) -> State:
    """:func:`tdse.run.loop.evolve` (the one loop; its keywords), with the final psi and U as
    one array each on the plan's (first) device: U(t) stepped in column bands over several
    GPUs is gathered there (the runs' own calls keep the bands)."""
    state = loop.evolve(plan, psi0, sinks, **kw)
    if hasattr(state.U, "to_array"):
        state.U = state.U.to_array(0)
    return state


def with_potential(config, function, **kw):
    """``config`` (a Config, path, TOML text or dict) with V(x, t) = ``function(x, t)``, a
    Python function evaluated on the host (:func:`tdse.model.callable.with_potential`:
    ``gradient``, ``time_dependent``, ``name``); the CPU, one run at a time."""
    from .model.callable import with_potential as with_potential_
    return with_potential_(load_config(config), function, **kw)


def scan(config, sets, **kw) -> dict:
    """Many runs at once: ``config`` (a Config, path, TOML text or dict) over ``sets``
    ({key: values} or [(key, values)]; see :func:`tdse.studies.scan.scan` for ``zipped``,
    ``out``, ``workers``, ``scheduler``, ``backend``, ``batch``, ``keep_psi``): a dict of
    arrays shaped (values..., t) per observable, with "scan" (the members) and "t"."""
    from .studies.scan import scan as scan_
    return scan_(load_config(config), sets, **kw)


def simulate(config, *, backend="auto", devices=None, out=None, force=False,
             allow_inaccurate=False, progress=False, threads=None, options=None) -> Result:
    """Run ``config`` (a Config, a TOML path or text, or a dict of sections).

    Writes ``out/<name>.h5`` only when ``out`` is given (never overwriting without
    ``force``); refuses a Taylor run whose exponential misses its tolerance unless
    ``allow_inaccurate``; ``options``: performance options over the config's ``[run]``
    table (:class:`tdse.options.RunOptions` or a dict, e.g. ``{"graphs": False}``).  Bad input raises :class:`tdse.config.ConfigError` naming the key."""
    cfg = load_config(config)
    if not isinstance(cfg, Config):  # pragma: no cover
        raise ConfigError("config", type(config).__name__, "must be a Config, path, TOML text or dict")
    if options is not None:
        cfg = with_options(cfg, options)
    if cfg.nuclei is not None:      # the 1D + 1D model: its own file (tdse.run.nuclei)
        from .run import nuclei
        return nuclei.run(prepare(cfg, backend=backend, devices=devices, threads=threads,
                                  allow_inaccurate=allow_inaccurate), out, force=force, progress=progress)
    with look_ahead(cfg, backend, threads) as workers:     # their start beside the set-up
        plan = prepare(cfg, backend=backend, devices=devices, threads=threads,
                       allow_inaccurate=allow_inaccurate)
        return run(plan, out, force=force, allow_inaccurate=allow_inaccurate, progress=progress,
                   workers=workers)


def extend(h5file, t_end, *, out=None, config=None, backend="auto", devices=None, force=False,
           progress=False, threads=None) -> Result:
    """A finished run file continued to ``t_end`` in a new file ``out``/<name>_to_<t_end>.h5
    (``out`` default: beside the file), holding the bits a run straight to ``t_end`` would
    (``tdse run INPUT --continue``); ``config``: the input it was run from, refused (a
    ConfigError naming the first differing line) where more than t_end differs; default:
    the file's own."""
    import os
    from .run.extend import extension
    out = out if out is not None else (os.path.dirname(os.path.abspath(h5file)))
    cfg, state, work = extension(h5file, None if config is None else load_config(config),
                                 t_end, out, force)
    plan = prepare(cfg, backend=backend, devices=devices, threads=threads)
    return run(plan, out, force=force, progress=progress, resume=(state, work))


def photoelectron_spectrum(h5file, gamma=None, method="window") -> dict:
    """The photoelectrons' dP/dE of a run file by the window operator on its last psi or,
    ``method="tsurff"``, from the t-SURFF flux it recorded (:mod:`tdse.studies.photoelectrons`;
    ``tdse spectrum --kind photoelectron``): energies (hartree, eV), "all", "left",
    "right", the continuum's population (t-SURFF: what crossed), the ATI comb."""
    from .run.runfile import read
    from .studies.photoelectrons import from_file
    return from_file(read(h5file), gamma, method=method)
