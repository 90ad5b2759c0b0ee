"""``tdse converge``: how far each printed number is from its converged value, as an
error bar that bounds (atomic units).

The input is run at dx, dx/2, dx/4 (each asked stencil; dt fixed), at dt, dt/2, dt/4 (the
input's stencil and dx), and in boxes 1.5 and 2 times as wide (the input's dx, dt); for
each series of levels h_0 > h_1 > h_2 the quantities Q (the lowest energies of H(0), the
populations P_n(t) in the eigenstates of H(0) and of H(t), <n>(t), <H>(t), the yield, the
acceleration at chosen times, the final psi) give

    observed order    p = log2(|Q_0 - Q_1| / |Q_1 - Q_2|),
    order used        p' = min(p clipped to [1, 8], the nominal order) (2 for the 3-point
                      stencil and midpoint, 4 for the 5-point stencil and cfm4): an
                      order above the nominal one would shrink the estimate
    Richardson limit  Q* = Q_2 + (Q_2 - Q_1) / (2^p' - 1),
    stated error      e_l = SAFETY |Q_l - Q*|  (the finest: SAFETY |Q_2 - Q_1| / (2^p' - 1)),

SAFETY = 2, so that a stated error bounds the true one (measured: tests/test_converge.py,
three inputs the study never saw against much finer runs, within 1-10x).  The sinc-DVR
converges exponentially ("spectral"): it has no algebraic order and none is printed; its
error is bounded through the differences d_l = |Q_l - Q_(l+1)|:
e_L = SAFETY d_(L-1) rho^2 / (1 - rho) with rho = d_(L-1) / d_(L-2) (d_(L-1) when rho >= 1)
and e_l = SAFETY d_l + e_(l+1).  The tail assumes each halving of dx shrinks the next
difference by rho^2 or more (spectral convergence squares the error; a slow, geometric
series with ratio rho >= 1/2 is still bounded thanks to SAFETY; a fast geometric one with
rho < 1/2 may have its finest level's error understated by up to 2 rho -- a level whose
error is then far below every coarser level's).  The box error is SAFETY times the larger
change under the two enlargements (a single 1.5x box under-counts it: the 1.5x box has
its own error).  The final psi's error is its distance to the finest level's psi (on the
coarse grid's points: 1 - |<psi|psi_ref>|, the phase-blind infidelity, and the L2
distance).

The coarsest (dx, stencil) and dt whose stated population errors fit the target (each
half of what the box leaves) are run once more and checked against the finest levels
(Q_ref = Q_space,finest + Q_time,finest - Q_input) before they are recommended: the
measured error plus the box error must meet the target, or the next finer levels are
tried.  Every run here uses the matrix-free Chebyshev exponential at tolerance 1e-12 (a
property of the exponential, not of the discretisation being measured); the
recommendation is about dx, stencil, scheme and dt, whatever method then computes the
exponentials.
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ..config import Config, ConfigError, WHOLE_RTOL
from ..model.nuclei import not_for
from ..model import hamiltonian, observables, states
from ..numerics import exponentials, schemes
from ..run.loop import Sink, evolve
from ..run.sinks import host_psi
from ..run.plan import prepare

#: every run of a convergence study: the Chebyshev exponential at this tolerance
EXPONENTIAL_TOL = 1e-12
P_CLIP = (1.0, 8.0)
#: every stated error is this times the estimate (module docstring)
SAFETY = 2.0
#: the box enlargements, as multiples of --box (1.5 -> 1.5 and 2)
BOX_STEPS = (1.0, 4.0 / 3.0)


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


class _AtTimes(Sink):
    """Records the study's quantities at the chosen steps (and step 0): a save point each."""
    NAMES = {"P_h0": "populations_h0", "P_ht": "populations_ht", "n_mean": "n_mean",
             "energy": "energy", "yield": "yield", "acceleration": "acceleration", "t": "t"}

    def __init__(self, plan, want, count):
        self.plan, self.want, self.K = plan, want, count
        self.measure = observables.Measure(plan.config, plan.x, plan.states[:count], plan.psi0)
        self.out = {k: [] for k in self.NAMES}

    def next_point(self, step, stop):
        return min((s for s in self.want if step < s <= stop), default=None)

    def begin(self, state):
        if 0 in self.want:
            self.record(state)

    def save(self, state):
        self.record(state)

    def record(self, state):
        cfg = self.plan.config
        row = self.measure(state.t, host_psi(state), states.eigenstates(cfg, state.t, self.K))
        for k, name in self.NAMES.items():
            v = row[name]
            self.out[k].append(v.tolist() if hasattr(v, "tolist") else v)


def observe(config: Config, times, count: int, backend="numpy") -> dict:
    """Run ``config`` (psi only; on the CPU, or stepped on a GPU with ``backend="cupy"``,
    measured on the host at the sample times) and return the quantities at ``times`` (each
    a whole number of steps): energies of H(0), P_n in H(0)/H(t) eigenstates, <n>, <H>, the
    final psi, the cost, and the backend the run stepped on."""
    config = dataclasses.replace(config, output=dataclasses.replace(config.output,
                                                                    populations=count))
    plan = prepare(config, backend=backend, check_resolution=False)
    rec = _AtTimes(plan, {round(t / config.time.dt): t for t in times}, count)
    stepper = plan.stepper()
    t0 = time.perf_counter()
    final = evolve(plan, plan.backend.xp.asarray(plan.psi0), [rec], stepper=stepper)
    g = config.grid
    return {"energies": plan.energies[:count].tolist(), **rec.out, "psi": host_psi(final),
            "x": plan.x, "dx": g.dx, "n": g.n, "steps": config.time.steps,
            "seconds": time.perf_counter() - t0, "chebyshev_terms": int(stepper.cheb_terms),
            "exponentials": int(stepper.exponentials),      # (NumPy integers on a GPU's graphs)
            "backend": plan.backend.name}


# ---------------------------------------------------------------- the study
def _series(runs, key_fn):
    """Stack one group of quantities over the levels: array (levels, quantities)."""
    return np.array([np.ravel(key_fn(r)) for r in runs], dtype=float)


def richardson(Q, nominal=2):
    """Q: (levels, quantities); ``nominal``: the discretisation's order, or None for a
    spectral (exponentially converging) one.  Returns {order, order_used, order_kind,
    errors[level], differences} with the stated errors of the module docstring (the max
    over quantities, SAFETY included)."""
    L = Q.shape[0]
    if L < 2:
        return {"order": None, "order_used": None, "order_kind": None, "errors": [None] * L,
                "differences": []}
    d = [float(np.abs(Q[i] - Q[i + 1]).max()) for i in range(L - 1)]
    if nominal is None:
        return _spectral(d, L)
    p = math.log2(d[-2] / d[-1]) if L >= 3 and d[-1] > 0 and d[-2] > 0 else None
    pu = min(max(p, P_CLIP[0]), P_CLIP[1], nominal) if p is not None and math.isfinite(p) else nominal
    limit = Q[-1] if d[-1] == 0 else Q[-1] + (Q[-1] - Q[-2]) / (2 ** pu - 1)
    errs = [SAFETY * float(np.abs(Q[i] - limit).max()) for i in range(L)]
    errs[-1] = SAFETY * d[-1] / (2 ** pu - 1)
    return {"order": p, "order_used": pu, "order_kind": "algebraic", "nominal_order": nominal,
            "errors": errs, "differences": d, "limit": np.asarray(limit, dtype=float).tolist()}


def _spectral(d, L):
    """Stated errors of an exponentially converging series from its differences."""
    rho = d[-1] / d[-2] if L >= 3 and d[-2] > 0 else 1.0
    tail = d[-1] * rho ** 2 / (1.0 - rho) if rho < 1.0 else d[-1]
    errs = [0.0] * L
    errs[-1] = SAFETY * tail
    for i in range(L - 2, -1, -1):
        errs[i] = SAFETY * d[i] + errs[i + 1]
    return {"order": None, "order_used": None, "order_kind": "exponential (spectral)",
            "nominal_order": None, "errors": errs, "differences": d}


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


def _summary(runs, stride, nominal):
    res = {name: richardson(_series(runs, f), nominal) for name, (_, f, _) in GROUPS.items()}
    res["final_psi"] = _psi_distances(runs, stride)
    return res


def study(config: Config, *, levels=3, target=1e-3, stencils=None, samples=10, count=None,
          box=1.5, progress=None, backend="numpy") -> dict:
    """The convergence study of the module docstring; a JSON-able dict.  ``backend``: where
    each run steps ("numpy", or "cupy": one GPU)."""
    import hashlib
    not_for(config, "tdse converge")
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
        r = observe(cfg, times, K, backend=backend)
        return r

    doc = {"input": config.name, "input_sha256": hashlib.sha256(config.source.encode()).hexdigest(),
           "units": "atomic units (hbar = m_e = e = 1)", "target": target, "levels": levels,
           "times": times, "count": K, "scheme": config.propagator.scheme, "backend": backend,
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
        space[str(st)] = {"dx": dxs, "runs": [_cost(r) for r in runs], "stencil": st,
                          **_summary(runs, [2 ** (levels - 1 - l) for l in range(levels)],
                                     hamiltonian.order(st))}
        space[str(st)]["_runs"] = runs
    dts = [dt / 2 ** l for l in range(levels)]
    truns = [run(with_numerics(config, dt=h), f"time dt = {h:g}") for h in dts]
    tres = {"dt": dts, "runs": [_cost(r) for r in truns],
            **_summary(truns, [1] * levels, schemes.get(config.propagator.scheme).order)}
    doc["space"], doc["time"] = space, tres
    if box:
        doc["box"] = _box(config, truns[0], [box * s for s in BOX_STEPS], run)
    doc["recommendation"] = _recommend(config, doc, target)
    if doc["recommendation"]["found"]:
        doc["recommendation"] = _verify(config, doc, target, truns, run)
    for s in space.values():
        s.pop("_runs")
    doc["input_numerics"]["estimated_error"] = _input_error(config, doc)
    doc["input_numerics"]["meets_target"] = bool(doc["input_numerics"]["estimated_error"] <= target)
    return doc


def _box(config, base, scales, run) -> dict:
    """The box error: SAFETY x the larger change of each group under the enlargements."""
    out = {"scales": scales, "scale": scales[0], "n": [], "changes": [], "seconds": 0.0}
    for sc in scales:
        wide = run(with_numerics(config, box=sc), f"box x {sc:g}")
        off = round((config.grid.x_min - wide["x"][0]) / config.grid.dx)
        out["changes"].append({name: float(np.abs(np.ravel(f(base)) - np.ravel(f(wide))).max())
                               for name, (_, f, _) in GROUPS.items()})
        a, b = base["psi"], wide["psi"][off:off + base["n"]]
        fid = abs(np.vdot(a, b)) / (np.linalg.norm(a) * np.linalg.norm(b))
        out["final_psi_infidelity"] = float(max(0.0, 1 - fid))
        out["n"].append(wide["n"])
        out["seconds"] += wide["seconds"]
    out["differences"] = out["changes"][0]  # the first enlargement's change (as before)
    out["errors"] = {name: SAFETY * max(c[name] for c in out["changes"]) for name in GROUPS}
    return out


def _box_error(doc, group="populations"):
    return doc.get("box", {}).get("errors", {}).get(group, 0.0)


def _verify(config, doc, target, truns, run) -> dict:
    """Run the recommended numerics (and, if they miss, the next finer levels) and measure
    their population error against Q_ref = Q_space,finest + Q_time,finest - Q_input."""
    rec = dict(doc["recommendation"])
    sp = doc["space"][rec["stencil"]]
    f = GROUPS["populations"][1]
    q = lambda r: np.ravel(f(r))  # noqa: E731
    ref = q(sp["_runs"][-1]) + q(truns[-1]) - q(truns[0])
    dxs, dts = sp["dx"], doc["time"]["dt"]
    i, j = dxs.index(rec["dx"]), dts.index(rec["dt"])
    tried = []
    while True:
        cfg = with_numerics(config, dx=dxs[i], dt=dts[j], stencil=sp["stencil"])
        r = run(cfg, f"check stencil {rec['stencil']} dx = {dxs[i]:g}, dt = {dts[j]:g}")
        measured = float(np.abs(q(r) - ref).max())
        ok = measured + _box_error(doc) <= target
        tried.append({"dx": dxs[i], "dt": dts[j], "measured_error": measured, "meets": ok})
        if ok or (i == len(dxs) - 1 and j == len(dts) - 1):
            break
        i, j = min(i + 1, len(dxs) - 1), min(j + 1, len(dts) - 1)
    per = schemes.get(config.propagator.scheme).exponentials
    steps = round(config.time.t_end / dts[j])
    rec.update(dx=dxs[i], dt=dts[j], n=cfg.grid.n, steps=steps, exponentials=steps * per,
               measured_error=measured, verified=ok, checks=tried)
    if not ok:
        rec.update(found=False, why=f"the recommended numerics, run, missed the target "
                                    f"(measured {measured:.2e} + box {_box_error(doc):.2e}); "
                                    f"refine further (--levels) or loosen --target")
    return rec


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
    return float(e + _box_error(doc))


def _recommend(config, doc, target):
    """The coarsest dx (over the stencils, fewest points first) and dt whose population
    errors are each within target/2 - box error/2."""
    budget = 0.5 * (target - _box_error(doc))
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
            "box_error": _box_error(doc),
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
        if s["populations"].get("order_kind", "algebraic") != "algebraic":
            out.append(f"{'':>10} convergence: {s['populations']['order_kind']} -- no algebraic "
                       f"order; errors bounded from the differences (x{SAFETY:g})")
        else:
            o, pu = s["populations"]["order"], s["populations"]["order_used"]
            eo = s["energy"]["order"]
            out.append(f"{'':>10} observed order (populations): "
                       f"{'%.2f' % o if o is not None else 'n/a'}, used {pu:g} (nominal "
                       f"{s['populations'].get('nominal_order')}); <H>: "
                       f"{'%.2f' % eo if eo is not None else 'n/a'}; errors x{SAFETY:g}")
    for st, s in doc["space"].items():
        rows(f"space {st}", s["dx"], s, "dx")
    rows("time", doc["time"]["dt"], doc["time"], "dt")
    if "box" in doc:
        b = doc["box"]
        ch = ", ".join(f"x{sc:g} (N = {n}) {c['populations']:.2e}"
                       for sc, n, c in zip(b["scales"], b["n"], b["changes"]))
        out.append(f"box: populations change by {ch}; stated box error {b['errors']['populations']:.2e} "
                   f"(x{SAFETY:g} the larger), <H> {b['errors']['energy']:.2e}, final psi "
                   f"infidelity {b['final_psi_infidelity']:.2e}")
    i = doc["input_numerics"]
    out.append(f"input numerics ({i['stencil']}, dx = {i['dx']:g}, {i['scheme']}, dt = {i['dt']:g}): "
               f"estimated population error {i['estimated_error']:.2e} "
               f"({'meets' if i['meets_target'] else 'misses'} the target {doc['target']:g})")
    r = doc["recommendation"]
    budget = 0.5 * (doc["target"] - (r.get("box_error") or _box_error(doc) or 0.0))
    rule = (f"the rule: the study's coarsest levels whose space and whose time error are each "
            f"<= (target - box error)/2 = {budget:.1e}")
    same = r["found"] and (str(r["stencil"]), r["dx"], r["dt"]) == (str(i["stencil"]), i["dx"], i["dt"])
    if r["found"] and i["meets_target"] and not same:
        rule += ("; the input's own numerics meet the target on the sum of their errors "
                 "(a looser rule: they need not change)")
    out.append(rule)
    if r["found"]:
        out.append(f"coarsest meeting {doc['target']:g}: stencil {r['stencil']}, dx = {r['dx']:g} "
                   f"(N = {r['n']}), {r['scheme']} dt = {r['dt']:g} ({r['steps']} steps, "
                   f"{r['exponentials']} exponentials); estimated errors: space {r['space_error']:.1e}, "
                   f"time {r['time_error']:.1e}, box {r['box_error'] or 0:.1e}; run and checked "
                   f"against the finest levels: {r['measured_error']:.1e} (+ box) meets the target")
    else:
        out.append(f"no recommendation: {r['why']}")
    return out
