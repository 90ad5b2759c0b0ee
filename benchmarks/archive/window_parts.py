"""#54: where a 3-point look-ahead window of 16 calls goes on one core (N = 8192, h2plus_moving_large, populations every 50): the window's steps of Tracker.window and states.warm_banded_many timed one by one, 8 windows (ms a window).
Usage: PYTHONPATH=. python benchmarks/archive/window_parts.py"""
import time, dataclasses, numpy as np, collections
from tdse import config as cfgmod
from tdse.model import states
from tdse.model.tracker import Tracker
from tdse.model.lapack import count_below, shifted_solves
from tdse.model.hamiltonian import kinetic_bands
base = cfgmod.load("inputs/h2plus_moving_large.toml")
w = base.grid.x_max - base.grid.x_min
N=8192
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil=3))
cfg = cfg.with_value("output.populations_every",50).with_value("time.t_end", 150000*cfg.time.dt)
tr = Tracker(cfg, cfg.output.populations)
g=cfg.grid; every=50; calls=16
T=collections.Counter()
def tick(k,t0): T[k]+=time.perf_counter()-t0; return time.perf_counter()
for a in range(1,9):
    t0=time.perf_counter()
    steps=list(range(a*calls*every,(a+1)*calls*every,every))
    V = tr._potentials([s*cfg.time.dt for s in steps]); t0=tick("potentials",t0)
    E,X = tr._scratch(steps[0]*cfg.time.dt, V[0]); t0=tick("anchor",t0)
    bounds=[states.residual_bound(g, v, tr.tol) for v in V[1:]]; t0=tick("bounds",t0)
    Vm=V[1:]; B,n=Vm.shape; K=X.shape[1]
    d0,d1,d2=kinetic_bands(3,g.dx); D=d0+Vm
    act=np.arange(B); sig=np.tile(E,(B,1)); Xs=np.broadcast_to(X,(B,n,K))
    for it in range(4):
        Da=D[act]
        A=(Da[:,None,:]-sig[:,:,None]).reshape(-1,n); Bm=Xs.transpose(1,0,2).reshape(n,-1); t0=tick("prep",t0)
        Y=shifted_solves(A,np.full(n-1,d1),Bm); t0=tick("solves",t0)
        Q=np.linalg.qr(Y.reshape(n,len(act),K).transpose(1,0,2))[0]; t0=tick("qr",t0)
        HQ=states._real_operator(g,Vm[act],np)(Q); t0=tick("HQ",t0)
        theta,W=np.linalg.eigh(np.matmul(Q.transpose(0,2,1),HQ)); Xn=np.matmul(Q,W); R=np.matmul(HQ,W); R-=Xn*theta[:,None,:]
        res=np.sqrt(np.diagonal(np.matmul(R.transpose(0,2,1),R),axis1=1,axis2=2).max(axis=1)); t0=tick("rr",t0)
        done=res<=np.asarray(bounds)[act]
        for i in np.flatnonzero(done):
            count_below(*states._tridiagonal_bands(g,Vm[act[i]]), theta[i,-1]+float(res[i]))
        t0=tick("sturm",t0)
        keep=~done; act,sig,Xs=act[keep],theta[keep],Xn[keep]
        T["iters"]+=1
        if not act.size: break
    phi=states.signed(np.concatenate([X.T]*16)/np.sqrt(g.dx)); t0=tick("signed",t0)
print({k: (round(v*1e3/8,2) if k!="iters" else v/8) for k,v in T.items()}, "ms a window")
