"""``tdse converge``: how far each printed number is from its converged value.

The input is run at dx, dx/2, dx/4 (each asked stencil; dt fixed) and at dt, dt/2, dt/4
(the input's stencil and dx), and once in a box 1.5 times as wide (the input's dx, dt);
for each series of levels h_0 > h_1 > h_2 the quantities Q (the lowest energies of H(0),
the populations P_n(t) in the eigenstates of H(0) and of H(t) and <n>(t) at chosen
times, the final psi) give

    observed order    p = log2(|Q_0 - Q_1| / |Q_1 - Q_2|),
    Richardson limit  Q* = Q_2 + (Q_2 - Q_1) / (2^p' - 1),  p' = p clipped to [1, 8],
    error estimate    e_l = |Q_l - Q*|  (the finest: |Q_2 - Q_1| / (2^p' - 1)),

and the final psi's error is measured as its distance to the finest level's psi (on the
coarse grid's points: 1 - |<psi|psi_ref>|, the phase-blind infidelity, and the L2
distance).  The coarsest (dx, stencil) and dt whose estimated errors in every population
and <n> stay within ``target`` are reported with their cost.  Every run here uses the
matrix-free Chebyshev exponential at tolerance 1e-12 (a property of the exponential, not
of the discretisation being measured); the recommendation is about dx, stencil, scheme
and dt, whatever method then computes the exponentials.

The DVR converges exponentially in dx, so its "order" is not a constant: its error
estimate is then the conservative |Q_l - Q_(l+1)| + e_(l+1).
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ..config import Config, ConfigError, WHOLE_RTOL
from ..model import observables, states
from ..numerics import exponentials, schemes
from ..run.loop import Observer, evolve
from ..run.plan import prepare

#: every run of a convergence study: the Chebyshev exponential at this tolerance
EXPONENTIAL_TOL = 1e-12
P_CLIP = (1.0, 8.0)


def with_numerics(config: Config, *, dx=None, dt=None, stencil=None, box=None) -> Config:
    """The config with another dx, dt, stencil or box scale (exact: the counts must stay
    whole), the Chebyshev exponential and no error window or output files."""
    g, tm = config.grid, config.time
    grid = dataclasses.replace(g, dx=g.dx if dx is None else dx,
                               stencil=g.stencil if stencil is None else stencil)
    if box is not None:
        half = 0.5 * (g.x_max - g.x_min) * box
        mid = 0.5 * (g.x_max + g.x_min)
        n = round(2 * half / grid.dx)
        grid = dataclasses.replace(grid, x_min=mid - 0.5 * n * grid.dx, x_max=mid + 0.5 * n * grid.dx)
    ratio = (grid.x_max - grid.x_min) / grid.dx
    if abs(ratio - round(ratio)) > WHOLE_RTOL * ratio:
        raise ConfigError("grid.dx", grid.dx, "does not divide the box")
    time_ = dataclasses.replace(tm, dt=tm.dt if dt is None else dt)
    steps = time_.t_end / time_.dt
    if abs(steps - round(steps)) > WHOLE_RTOL * steps:
        raise ConfigError("time.dt", time_.dt, "does not divide t_end")
    prop = dataclasses.replace(config.propagator, method=exponentials.Chebyshev.name,
                               tolerance=EXPONENTIAL_TOL,
                               error_window=0, operator=False)
    return dataclasses.replace(config, grid=grid, time=time_, propagator=prop)


class _AtTimes(Observer):
    """Records the study's quantities at the chosen steps (and step 0)."""
    NAMES = {"P_h0": "populations_h0", "P_ht": "populations_ht", "n_mean": "n_mean",
             "energy": "energy", "yield": "yield", "acceleration": "acceleration", "t": "t"}

    def __init__(self, plan, want, count, progress=None):
        self.plan, self.want, self.K, self.progress = plan, want, count, progress
        self.measure = observables.Measure(plan.config, plan.x, plan.states[:count], plan.psi0)
        self.out = {k: [] for k in self.NAMES}

    def begin(self, state):
        if 0 in self.want:
            self.record(state)

    def after(self, state):
        if state.step in self.want:
            self.record(state)
        if self.progress:
            self.progress()

    def record(self, state):
        cfg = self.plan.config
        row = self.measure(state.t, state.psi, states.eigenstates(cfg, state.t, self.K))
        for k, name in self.NAMES.items():
            v = row[name]
            self.out[k].append(v.tolist() if hasattr(v, "tolist") else v)


def observe(config: Config, times, count: int, progress=None) -> dict:
    """Run ``config`` (psi only, on the CPU) and return the quantities at ``times`` (each a
    whole number of steps): energies of H(0), P_n in H(0)/H(t) eigenstates, <n>, <H>, the
    final psi, and the cost."""
    config = dataclasses.replace(config, output=dataclasses.replace(config.output,
                                                                    populations=count))
    plan = prepare(config, backend="numpy", check_resolution=False)
    rec = _AtTimes(plan, {round(t / config.time.dt): t for t in times}, count, progress)
    stepper = plan.stepper()
    t0 = time.perf_counter()
    final = evolve(plan, plan.psi0, [rec], stepper=stepper)
    g = config.grid
    return {"energies": plan.energies[:count].tolist(), **rec.out, "psi": final.psi,
            "x": plan.x, "dx": g.dx, "n": g.n, "steps": config.time.steps,
            "seconds": time.perf_counter() - t0, "chebyshev_terms": stepper.cheb_terms,
            "exponentials": stepper.exponentials}


# ---------------------------------------------------------------- the study
def _series(runs, key_fn):
    """Stack one group of quantities over the levels: array (levels, quantities)."""
    return np.array([np.ravel(key_fn(r)) for r in runs], dtype=float)


def richardson(Q):
    """Q: (levels, quantities).  Returns {order, order_used, limit, errors[level]} with
    errors the max over quantities of |Q_l - Q*| (the finest: |Q_L - Q_(L-1)|/(2^p' - 1))."""
    L = Q.shape[0]
    if L < 2:
        return {"order": None, "order_used": None, "errors": [None] * L, "differences": []}
    d = [float(np.abs(Q[i] - Q[i + 1]).max()) for i in range(L - 1)]
    if L >= 3 and d[-1] > 0 and d[-2] > 0:
        p = math.log2(d[-2] / d[-1])
    else:
        p = None
    pu = min(max(p, P_CLIP[0]), P_CLIP[1]) if p is not None and math.isfinite(p) else P_CLIP[0]
    if d[-1] == 0:
        limit = Q[-1]
    else:
        limit = Q[-1] + (Q[-1] - Q[-2]) / (2 ** pu - 1)
    errs = [float(np.abs(Q[i] - limit).max()) for i in range(L)]
    errs[-1] = d[-1] / (2 ** pu - 1)
    return {"order": p, "order_used": pu, "errors": errs, "differences": d}


GROUPS = {  # name: (what, function of an observe() result, counts toward the target)
    "populations": ("P_n(t) in the eigenstates of H(0) and of H(t)",
                    lambda r: np.concatenate([np.ravel(r["P_h0"]), np.ravel(r["P_ht"])]), True),
    "n_mean": ("<n>(t) = sum n P_n(t)", lambda r: r["n_mean"], False),
    "energy": ("<H(t)> (hartree)", lambda r: r["energy"], False),
    "energies": ("lowest eigenvalues of H(0) (hartree)", lambda r: r["energies"], False),
    "yield": ("1 - norm (what an absorber took; the norm drift without one)",
              lambda r: r["yield"], False),
    "acceleration": ("the dipole acceleration <-dV/dx> (what a harmonic spectrum is made of)",
                     lambda r: r.get("acceleration", []), False),
}


def _psi_distances(runs, stride):
    """Per level: infidelity 1 - |<a|b>| and L2 distance of the final psi to the finest
    level's, on the coarse points (``stride[l]``: the finest's points per level point)."""
    ref = runs[-1]
    out = []
    for r, s in zip(runs, stride):
        a = r["psi"]
        b = ref["psi"][::s][:a.size]
        fid = abs(np.vdot(a, b)) / (np.linalg.norm(a) * np.linalg.norm(b))
        out.append({"infidelity": float(max(0.0, 1 - fid)),
                    "l2": float(np.linalg.norm(a - b) * math.sqrt(r["dx"]))})
    return out


def _summary(runs, stride):
    res = {name: richardson(_series(runs, f)) for name, (_, f, _) in GROUPS.items()}
    res["final_psi"] = _psi_distances(runs, stride)
    return res


def study(config: Config, *, levels=3, target=1e-3, stencils=None, samples=10, count=None,
          box=1.5, progress=None) -> dict:
    """The convergence study of the module docstring; a JSON-able dict."""
    import hashlib
    if levels < 2:
        raise ConfigError("--levels", levels, "must be >= 2")
    if not (target > 0):
        raise ConfigError("--target", target, "must be > 0")
    K = count or config.output.populations
    stencils = list(stencils or [config.grid.stencil])
    dt = config.time.dt
    steps = config.time.steps
    idx = sorted({max(1, round(steps * (i + 1) / samples)) for i in range(samples)})
    times = [i * dt for i in idx]
    say = progress or (lambda msg: None)

    def run(cfg, label):
        say(f"{label}: N = {cfg.grid.n}, {cfg.time.steps} steps")
        r = observe(cfg, times, K)
        return r

    doc = {"input": config.name, "input_sha256": hashlib.sha256(config.source.encode()).hexdigest(),
           "units": "atomic units (hbar = m_e = e = 1)", "target": target, "levels": levels,
           "times": times, "count": K, "scheme": config.propagator.scheme,
           "exponential": f"chebyshev, truncation <= {EXPONENTIAL_TOL:g} per exponential",
           "exponential_tolerance": EXPONENTIAL_TOL,
           "groups": {k: v[0] for k, v in GROUPS.items()}, "target_groups": ["populations"],
           "input_numerics": {"stencil": config.grid.stencil, "dx": config.grid.dx, "dt": dt,
                              "scheme": config.propagator.scheme, "n": config.grid.n,
                              "steps": steps}}
    space = {}
    for st in stencils:
        dxs = [config.grid.dx / 2 ** l for l in range(levels)]
        runs = [run(with_numerics(config, dx=h, stencil=st), f"space {st} dx = {h:g}") for h in dxs]
        space[str(st)] = {"dx": dxs, "runs": [_cost(r) for r in runs],
                          **_summary(runs, [2 ** (levels - 1 - l) for l in range(levels)])}
    dts = [dt / 2 ** l for l in range(levels)]
    truns = [run(with_numerics(config, dt=h), f"time dt = {h:g}") for h in dts]
    tres = {"dt": dts, "runs": [_cost(r) for r in truns], **_summary(truns, [1] * levels)}
    doc["space"], doc["time"] = space, tres
    if box:
        base = truns[0]
        wide = run(with_numerics(config, box=box), f"box x {box:g}")
        off = round((config.grid.x_min - (wide["x"][0])) / config.grid.dx)
        diffs = {}
        for name, (_, f, _) in GROUPS.items():
            diffs[name] = float(np.abs(np.ravel(f(base)) - np.ravel(f(wide))).max())
        a, b = base["psi"], wide["psi"][off:off + base["n"]]
        fid = abs(np.vdot(a, b)) / (np.linalg.norm(a) * np.linalg.norm(b))
        doc["box"] = {"scale": box, "n": wide["n"], "differences": diffs,
                      "final_psi_infidelity": float(max(0.0, 1 - fid)), "seconds": wide["seconds"]}
    doc["recommendation"] = _recommend(config, doc, target)
    doc["input_numerics"]["estimated_error"] = _input_error(config, doc)
    doc["input_numerics"]["meets_target"] = bool(doc["input_numerics"]["estimated_error"] <= target)
    return doc


def _cost(r):
    return {"n": r["n"], "steps": r["steps"], "seconds": r["seconds"],
            "exponentials": r["exponentials"], "chebyshev_terms": r["chebyshev_terms"]}


def _input_error(config, doc):
    """Estimated population error of the input's own numerics: space (input stencil,
    level 0) + time (level 0) + box."""
    sp = doc["space"].get(str(config.grid.stencil))
    e = doc["time"]["populations"]["errors"][0] or 0.0
    if sp is not None:
        e += sp["populations"]["errors"][0] or 0.0
    if "box" in doc:
        e += doc["box"]["differences"]["populations"]
    return float(e)


def _recommend(config, doc, target):
    """The coarsest dx (over the stencils, fewest points first) and dt whose population
    errors are each within target/2 - box error/2."""
    budget = 0.5 * (target - doc.get("box", {}).get("differences", {}).get("populations", 0.0))
    best = None
    for st, s in doc["space"].items():
        for dx, err, cost in zip(s["dx"], s["populations"]["errors"], s["runs"]):
            if err is not None and err <= budget:
                cand = (cost["n"], st, dx, err)
                if best is None or cand[0] < best[0]:
                    best = cand
                break
    t = doc["time"]
    dt_ok = next(((h, e) for h, e in zip(t["dt"], t["populations"]["errors"])
                  if e is not None and e <= budget), None)
    if best is None or dt_ok is None or budget <= 0:
        return {"found": False, "why": ("the box alone exceeds the target" if budget <= 0 else
                                         "no level meets the target: refine further "
                                         "(--levels) or loosen --target")}
    n, st, dx, e_dx = best
    steps = round(config.time.t_end / dt_ok[0])
    per = schemes.get(config.propagator.scheme).exponentials
    return {"found": True, "stencil": st, "dx": dx, "n": n, "dt": dt_ok[0], "steps": steps,
            "scheme": config.propagator.scheme, "space_error": e_dx, "time_error": dt_ok[1],
            "box_error": doc.get("box", {}).get("differences", {}).get("populations"),
            "exponentials": steps * per}


def table(doc) -> list[str]:
    """The study as text lines (atomic units)."""
    out = [f"{doc['input']}: convergence of {', '.join(doc['groups'][g] for g in doc['target_groups'])} "
           f"at {len(doc['times'])} times up to t = {doc['times'][-1]:.4g}; exponentials: "
           f"{doc['exponential']}", ""]
    hdr = f"{'series':>10} {'level':>12} {'N':>6} {'steps':>6} {'P err':>9} {'<n> err':>9} " \
          f"{'<H> err':>9} {'E_n err':>9} {'yield err':>9} {'accel err':>9} {'psi 1-F':>9} {'s':>6}"
    out.append(hdr)

    def rows(label, hs, s, unit):
        for i, h in enumerate(hs):
            e = {g: (s[g]["errors"][i] if g in s else float("nan")) for g in GROUPS}
            c = s["runs"][i]
            out.append(f"{label:>10} {unit}={h:<9.4g} {c['n']:6d} {c['steps']:6d} "
                       f"{e['populations']:9.2e} {e['n_mean']:9.2e} {e['energy']:9.2e} "
                       f"{e['energies']:9.2e} {e['yield']:9.2e} {e['acceleration']:9.2e} "
                       f"{s['final_psi'][i]['infidelity']:9.2e} {c['seconds']:6.1f}")
        o = s["populations"]["order"]
        out.append(f"{'':>10} observed order (populations): {'%.2f' % o if o is not None else 'n/a'}"
                   f"{'' if o is None else ''}; <H>: "
                   f"{'%.2f' % s['energy']['order'] if s['energy']['order'] is not None else 'n/a'}")
    for st, s in doc["space"].items():
        rows(f"space {st}", s["dx"], s, "dx")
    rows("time", doc["time"]["dt"], doc["time"], "dt")
    if "box" in doc:
        b = doc["box"]
        out.append(f"box x {b['scale']:g} (N = {b['n']}): populations change by "
                   f"{b['differences']['populations']:.2e}, <H> by {b['differences']['energy']:.2e}, "
                   f"final psi infidelity {b['final_psi_infidelity']:.2e}")
    i = doc["input_numerics"]
    out.append(f"input numerics ({i['stencil']}, dx = {i['dx']:g}, {i['scheme']}, dt = {i['dt']:g}): "
               f"estimated population error {i['estimated_error']:.2e} "
               f"({'meets' if i['meets_target'] else 'misses'} the target {doc['target']:g})")
    r = doc["recommendation"]
    if r["found"]:
        out.append(f"coarsest meeting {doc['target']:g}: stencil {r['stencil']}, dx = {r['dx']:g} "
                   f"(N = {r['n']}), {r['scheme']} dt = {r['dt']:g} ({r['steps']} steps, "
                   f"{r['exponentials']} exponentials); estimated errors: space {r['space_error']:.1e}, "
                   f"time {r['time_error']:.1e}, box {r['box_error'] or 0:.1e}")
    else:
        out.append(f"no recommendation: {r['why']}")
    return out
