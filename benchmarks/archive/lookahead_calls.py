"""#54 probe: where a GPU CLI run's look-ahead time goes, call by call: for each populations
call the seconds the loop spent in it and whether it computed the pairs itself (its task
not done) -- the run's `eigenpairs_wait_seconds` split.  argv: log.json workers input out [backend]
(the run-overhead suite's 3-point input: N = 8192, 150000 steps, populations every 50)."""
import json, sys, time
from tdse.run import eigenpairs as E
W, LOG = sys.argv[2], sys.argv[1]
E.GPU_WORKERS = int(W)
log = []
orig_call, orig_take = E.Lookahead.__call__, E.Lookahead._take
state = {}
def take(self, step, t):
    out = orig_take(self, step, t)
    state["took"] = out is not None
    return out
def call(self, step, t):
    state["took"] = False
    t0 = time.perf_counter()
    out = orig_call(self, step, t)
    t1 = time.perf_counter()
    log.append((step, t1 - t0, state["took"], t1, len(self.tasks)))
    return out
E.Lookahead.__call__, E.Lookahead._take = call, take
def dump():
    json.dump(log, open(LOG, "w"))
    alone = [r for r in log if not r[2]]
    tot = sum(r[1] for r in log)
    print(f"workers={W} calls={len(log)} in-call={tot:.3f}s alone={len(alone)} "
          f"alone_s={sum(r[1] for r in alone):.3f} first_alone={[r[0] for r in alone[:12]]} "
          f"last_alone={[r[0] for r in alone[-5:]]}")
sys.argv = ["tdse", "run", sys.argv[3], "--out", sys.argv[4], "--backend", (sys.argv[5] if len(sys.argv) > 5 else "cupy"), "--quiet",
            "--no-plots", "--force", "--yes", "--allow-inaccurate"]
from tdse.ui.command import main
try:
    main()
finally:
    dump()
