"""#54 item 3: `tdse run` with and without the pre-loop context switch, alternately, one
process each: the loop's seconds (the run file's timeline), the switch's seconds, the wall."""
import json, os, subprocess, sys, time, tempfile
import h5py
import numpy as np
out = os.environ.get("OUT", ".")
cases = [("inputs/atom_hhg.toml", ["--set", "propagator.time_error=none"]),
         ("inputs/h2plus_moving_large.toml", ["--set", "propagator.time_error=none", "--set",
          "propagator.method=chebyshev", "--set", "time.t_end=24", "--set", "output.populations_every=50"])]
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 4
rows = []
for path, extra in cases:
    res = {True: [], False: []}
    for r in range(reps):
        for sw in (True, False):
            d = tempfile.mkdtemp()
            cmd = [sys.executable, "-m", "tdse", "run", path, "--out", d, "--force", "--no-plots", "-q",
                   "--backend", "cupy", "--set", f"run.context_switch={'true' if sw else 'false'}", *extra]
            t0 = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if p.returncode:
                print(p.stderr[-2000:]); continue
            h5 = [f for f in os.listdir(d) if f.endswith(".h5")][0]
            with h5py.File(os.path.join(d, h5)) as f:
                tl = json.loads(f.attrs["timeline"])
                res[sw].append({"wall": wall, "loop": tl["loop_end"] - tl["loop"],
                                "switch": float(f.attrs["context_switch_seconds"]),
                                "steps": int(f["observables/step"][-1])})
    for sw in (True, False):
        v = res[sw]
        med = {k: float(np.median([x[k] for x in v])) for k in ("wall", "loop", "switch")}
        rows.append({"input": path, "extra": extra, "context_switch": sw, "runs": v, **med,
                     "steps": v[0]["steps"] if v else None})
        print(f"{os.path.basename(path):28s} switch={sw!s:5s} wall {med['wall']:.2f} s  loop {med['loop']:.3f} s "
              f"({med['loop'] / max(1, rows[-1]['steps']) * 1e6:.1f} us/step)  switch {med['switch']:.3f} s")
json.dump({"kind": "probe", "rows": rows}, open(os.path.join(out, "switch_probe.json"), "w"), indent=1)
