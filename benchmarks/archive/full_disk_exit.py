"""How a `tdse run` on a disk another process fills ends, N times (the flaky
test_a_disk_filled_by_another_process_leaves_a_file_that_resumes: the run exited -11, not 2,
5 times in 40 on this box): the test's scenario -- tiny.toml for t = 8 on a 4 MiB tmpfs, dd
filling it 0.5 s after the .part appears -- and a count of the exit codes, with the stderr
of any other than 2 (PYTHONFAULTHANDLER on: where it crashed).  Needs root (mount).

    python benchmarks/archive/full_disk_exit.py N
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__":
    work = tempfile.mkdtemp()
    toml = os.path.join(work, "tiny.toml")
    src = open(os.path.join(ROOT, "inputs", "tiny.toml")).read()
    with open(toml, "w") as f:
        f.write(src.replace("t_end = 1.0", "t_end = 8.0").replace(
            "[output]\nevery = 20", "[output]\nevery = 5\nflush_seconds = 0.0"))
    codes = {}
    for i in range(int(sys.argv[1])):
        mnt = os.path.join(work, f"disk{i}")
        os.makedirs(mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt], check=True)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "tdse.ui.cli", "run", toml, "--out", mnt,
                                     "--no-plots", "-q", "--backend", "numpy"], cwd=ROOT, text=True,
                                    stderr=subprocess.PIPE, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
            part, t0 = os.path.join(mnt, "tiny.h5.part"), time.monotonic()
            while not os.path.exists(part) and proc.poll() is None and time.monotonic() - t0 < 60:
                time.sleep(0.05)
            time.sleep(0.5)
            subprocess.run(["dd", "if=/dev/zero", f"of={mnt}/filler", "bs=4k"], capture_output=True)
            err = proc.communicate(timeout=300)[1]
            codes[proc.returncode] = codes.get(proc.returncode, 0) + 1
            if proc.returncode != 2:
                print(i, proc.returncode, err[-1500:], flush=True)
        finally:
            subprocess.run(["umount", "-l", mnt])
            shutil.rmtree(mnt, ignore_errors=True)
    print("exit codes:", codes)
