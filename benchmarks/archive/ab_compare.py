import glob, os, sys
import h5py, numpy as np
a, b = sys.argv[1:3]
bad = 0
files = sorted(glob.glob(os.path.join(a, "*", "*.h5")))
if not files:
    print("no files"); sys.exit(1)
for fa in files:
    fb = os.path.join(b, os.path.relpath(fa, a))
    if not os.path.exists(fb):
        print("MISSING", fb); bad += 1; continue
    diffs, n = [], 0
    with h5py.File(fa) as A, h5py.File(fb) as B:
        def visit(name, obj):
            global n
            if isinstance(obj, h5py.Dataset):
                n += 1
                if name not in B:
                    diffs.append(name + " missing"); return
                x, y = obj[()], B[name][()]
                if x.dtype.kind in "fc" and x.shape == y.shape:
                    if not np.array_equal(x.view(np.uint8) if x.size else x, y.view(np.uint8) if y.size else y):
                        d = np.nanmax(np.abs(x - y)) if x.size else 0
                        if "seconds" not in name and "timing" not in name:
                            diffs.append(f"{name} max|d|={d:.2e}")
                elif not np.array_equal(x, y):
                    diffs.append(name)
        A.visititems(visit)
    print(os.path.relpath(fa, a), f"{n} datasets,", "BIT-EQUAL" if not diffs else "DIFF: " + "; ".join(diffs[:8]))
    bad += bool(diffs)
print("files differing:", bad)
