"""#56: the local error estimated every m-th step only (weight m; "left" or trapezoid "trap"), e carried by one midpoint step of m dt: stated / true and the cost over a step, on the four drives (random parameters of a seed).  python benchmarks/archive/estimate_stride.py SEED 1,2,4,8"""
import time, sys, math, numpy as np, tdse, dataclasses
sys.path.insert(0,'.')
from benchmarks import drives
from tdse.numerics.adaptive import EstimatingStepper, transport_config, _at_step, SAFETY
from tdse.run.timeerror import stated, phase_blind_distance
def err_of(cfg, psi, e):
    E, dp, ca = stated(np, psi[:,None], e[:,None], np.zeros((0,len(psi)))[None], cfg.grid.dx)
    return float(E[0])                  # (stated: SAFETY x the carried error, as a run states it)
seed=int(sys.argv[1]); ms=[int(x) for x in sys.argv[2].split(',')]
rng=np.random.default_rng(seed)
for kind in drives.KINDS:
    cfg=drives.make(kind, rng)
    _, ref = drives.reference(cfg)
    plan=tdse.prepare(cfg, backend="numpy")
    est=EstimatingStepper(cfg, plan.stepper, np)
    base, loc = est.base, est.local
    dt=cfg.time.dt; S=cfg.time.steps
    # run psi once, storing psi at each step
    psi=np.asarray(plan.psi0,dtype=complex); P=[psi]
    t0=time.perf_counter()
    for j in range(S):
        psi=base.step(psi,j); P.append(psi)
    tstep=(time.perf_counter()-t0)/S
    true=phase_blind_distance(P[-1], ref, cfg.grid.dx)
    out=[]
    for m in ms:
        for rule in (("left","trap") if m>1 else ("left",)):
            carry=plan.stepper(transport_config(_at_step(cfg, m*dt)))
            e=np.zeros_like(psi); tw=tc=0
            Lprev=None
            for k in range(S//m):
                j=k*m
                t1=time.perf_counter()
                if rule=="left":
                    L=loc.vector(P[j], j*dt, dt, j)*m; x=e+L
                else:
                    if Lprev is None: Lprev=loc.vector(P[j], j*dt, dt, j)
                    x=e+0.5*m*Lprev
                t2=time.perf_counter()
                e=carry.step(x,k); t3=time.perf_counter()
                if rule=="trap":
                    Lprev=loc.vector(P[j+m], (j+m)*dt, dt, j+m); e=e+0.5*m*Lprev
                t4=time.perf_counter()
                tw+=t2-t1+t4-t3; tc+=t3-t2
            E=err_of(cfg, P[-1], e)
            out.append(f"m={m}{rule[0]}: st/true {E/true:5.2f} cost +{(tw+tc)/S/tstep:4.2f}")
    print(f"{kind:7s} dt={dt} true={true:.2e}", " | ".join(out), flush=True)
