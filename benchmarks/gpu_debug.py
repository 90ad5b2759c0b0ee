import numpy as np, cupy as cp, mgemm
from mgemm.executors.cupy_exec import enable_peer_access, _ptr
enable_peer_access([0, 1, 2, 3])
rng = np.random.default_rng(0)
for dt in (np.float64, np.complex128):
    for shape in [(1, 1, 1), (64, 48, 80)]:
        m, k, n = shape
        Ah = rng.standard_normal((m, k)).astype(dt); Bh = rng.standard_normal((k, n)).astype(dt)
        with cp.cuda.Device(0): A = cp.asarray(Ah)
        with cp.cuda.Device(1): B = cp.asarray(Bh)
        print("B device", B.device.id)
        for pl, cdev in (("three", 0), ("three4", 2)):
            with cp.cuda.Device(cdev): C = cp.zeros((m, n), dt)
            devs = [0, 1] if pl == "three" else [0, 1, 2, 3]
            out = mgemm.gemm(A, B, C, 1.0, 0.0, devices=devs, tile=16)
            err = np.abs(out.get() - Ah @ Bh).max()
            print(dt.__name__, shape, pl, "err", err)
            if err > 1e-10:
                s = mgemm.executors.get("cupy").last_schedule
                for op in s.ops[:6]:
                    print("  ", op, op.reads, op.writes, op.deps)
        # raw 2-D peer copy dev1 -> dev0
        with cp.cuda.Device(0):
            dst = cp.zeros((k, 16), dt)
            st = cp.cuda.Stream(non_blocking=True)
            w = min(n, 16)
            cp.cuda.runtime.memcpy2DAsync(_ptr(dst, 0, 0), 16 * dst.itemsize, _ptr(B, 0, 0),
                                          n * B.itemsize, w * B.itemsize, k, 4, st.ptr)
            st.synchronize()
            print("raw copy err", np.abs(dst.get()[:, :w] - Bh[:, :w]).max())
