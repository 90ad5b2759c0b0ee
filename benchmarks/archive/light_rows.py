"""#59 item 1: a CPU scan batch with --save final's rows full or light (tdse.model.observables.COSTLY skipped where no kept series reads them: tdse.studies.scan._Recorder), alternating 3 times in one process: atom_hhg, 16 members, 1103 steps.  Usage: PYTHONPATH=. python benchmarks/archive/light_rows.py"""
import time
import numpy as np
import tdse
from tdse.studies import scan as S
cfg = tdse.load_config("inputs/atom_hhg.toml").with_value("propagator.time_error", "none").with_value("time.t_end", 110.3)
configs = [cfg.with_value("field.E0", float(e)) for e in np.linspace(0.03, 0.09, 16)]
keep = S.skippable
res = {}
S.run_batch(configs[:2], "numpy", full={"acceleration"})
for rep in range(3):
    for name in ("full rows", "light rows"):
        S.skippable = keep if name == "light rows" else (lambda k: ())
        r = S.run_batch(configs, "numpy", full={"acceleration"})
        res.setdefault(name, []).append(r["seconds"])
S.skippable = keep
print(f"# atom_hhg, 16 members, 1103 steps (t_end 110.3), numpy on this 2-CPU box, {time.strftime('%Y-%m-%dT%H:%M', time.gmtime())}: the batch's loop (run_batch's seconds), --save final's rows full or light, alternating")
for k, v in res.items():
    print(f"{k:12s} " + " ".join(f"{x:.2f}" for x in v) + f"  median {np.median(v):.2f} s")
print(f"light / full: {np.median(res['light rows']) / np.median(res['full rows']):.3f}")
