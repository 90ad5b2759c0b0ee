"""#54: the GPU loop's time with H(t)'s populations every P steps against at the run's ends
only, by function (cProfile of the main thread, wall clock: a wait for the GIL or the device
is charged to the call that waited).  h2plus_moving_large's molecule at N points, 3-point,
Chebyshev midpoint, no error bar; one warm run first.  Prints each case's loop and the
functions whose cumulative time differs most between the two.
Usage: python populations_profile.py BACKEND N STEPS EVERY"""
import cProfile, dataclasses, os, pstats, sys, tempfile
sys.path.insert(0, os.getcwd())
import h5py
from tdse import config as cfgmod
from tdse.run.driver import run
from tdse.run.runfile import readable_attrs

backend, N, S, P = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
base = cfgmod.load("inputs/h2plus_moving_large.toml")
w = base.grid.x_max - base.grid.x_min
cfg = dataclasses.replace(base, grid=dataclasses.replace(base.grid, dx=w / N, stencil=3))
cfg = (cfg.with_value("propagator.method", "chebyshev").with_value("propagator.time_error", "none")
       .with_value("propagator.scheme", "midpoint").with_value("time.t_end", S * cfg.time.dt))
run(cfg.with_value("time.t_end", 200 * cfg.time.dt), tempfile.mkdtemp(), backend=backend, force=True)
stats = {}
for name, every in (("every", P), ("ends", S), ("every", P), ("ends", S)):
    pr = cProfile.Profile()
    pr.enable()
    r = run(cfg.with_value("output.populations_every", every), tempfile.mkdtemp(), backend=backend, force=True)
    pr.disable()
    with h5py.File(r.path) as f:
        loop = float(readable_attrs(f)["wall_seconds"])
    print(f"{name}: loop {loop:.3f} s ({loop / S * 1e6:.1f} us/step)")
    st = pstats.Stats(pr)
    stats[name] = {f"{os.path.relpath(k[0]) if k[0].startswith('/') else k[0]}:{k[1]}({k[2]})": (v[3], v[2], v[1])
                   for k, v in st.stats.items()}       # cumulative, total, calls
diff = []
for k in set(stats["every"]) | set(stats["ends"]):
    a, b = stats["every"].get(k, (0, 0, 0)), stats["ends"].get(k, (0, 0, 0))
    diff.append((a[0] - b[0], a[1] - b[1], k, a, b))
print("\nlast pair: cumulative every - ends (s), tottime every - ends (s), function, (cum, tot, calls) every / ends")
for d in sorted(diff, key=lambda d: -abs(d[0]))[:30]:
    print(f"{d[0]:+8.3f} {d[1]:+8.3f}  {d[2][:90]}  {d[3][0]:.3f}/{d[3][1]:.3f}/{d[3][2]}  {d[4][0]:.3f}/{d[4][1]:.3f}/{d[4][2]}")
print("\nby tottime difference")
for d in sorted(diff, key=lambda d: -abs(d[1]))[:20]:
    print(f"{d[0]:+8.3f} {d[1]:+8.3f}  {d[2][:90]}  {d[3][0]:.3f}/{d[3][1]:.3f}/{d[3][2]}  {d[4][0]:.3f}/{d[4][1]:.3f}/{d[4][2]}")
