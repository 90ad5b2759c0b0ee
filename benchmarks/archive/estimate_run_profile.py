"""cProfile of atom_hhg (1000 steps) with time_error = "estimate" on a backend (#56's GPU row)."""
import cProfile, pstats, sys, time
import tdse
from tdse.config import with_values
backend = sys.argv[1]
cfg = tdse.load_config("inputs/atom_hhg.toml")
cfg = with_values(cfg, [("time.t_end", cfg.time.dt * 1000), ("output.every", 50)])
for k in ("none", "estimate", "none", "estimate"):
    r = tdse.simulate(cfg.with_value("propagator.time_error", k), backend=backend)
    print(k, "seconds", round(r.seconds, 3))
pr = cProfile.Profile(); pr.enable()
tdse.simulate(cfg.with_value("propagator.time_error", "estimate"), backend=backend)
pr.disable()
st = pstats.Stats(pr); st.sort_stats("tottime").print_stats(22); st.sort_stats("cumtime").print_stats(45)
