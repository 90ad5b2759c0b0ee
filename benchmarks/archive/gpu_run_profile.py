"""#54: cProfile of `tdse run INPUT [--set ...]` on a GPU: the functions by own and by cumulative time (the cumulative column is unreliable across the loop's threads).

    python benchmarks/archive/gpu_run_profile.py INPUT [--set KEY=V ...]
"""
import cProfile, pstats, sys, tempfile, io
sys.argv = ["tdse", "run", sys.argv[1], "--out", tempfile.mkdtemp(), "--backend", "cupy", "--quiet",
            "--no-plots", "--force"] + sys.argv[2:]
from tdse.ui.cli import main
pr = cProfile.Profile()
pr.enable()
try:
    main()
except SystemExit:
    pass
pr.disable()
for key, n, filt in (("tottime", 30, None), ("cumulative", 60, "tdse/(run|numerics)|mgemm/arrays")):
    s = io.StringIO()
    st = pstats.Stats(pr, stream=s).sort_stats(key)
    st.print_stats(filt, n) if filt else st.print_stats(n)
    print(s.getvalue()[:12000])
s = io.StringIO()
pstats.Stats(pr, stream=s).print_callers("copy_from_device_async|copy_to_host_async|astype|matmul")
print(s.getvalue()[:5000])
