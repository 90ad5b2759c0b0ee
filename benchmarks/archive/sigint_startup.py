"""SIGINT at DELAY seconds into `python -m tdse.ui.cli run INPUT` (its start-up: imports, the
precheck, the first steps), REPEAT times per delay: the exit statuses (130 expected; -2 is
the process killed by SIGINT at its exit: CPython's note of an unhandled KeyboardInterrupt,
left set where an interrupt passed through code it ran by PyRun_*, cleared by
tdse.run.interrupts.acknowledge since 880d405).

    python benchmarks/archive/sigint_startup.py [INPUT] [REPEAT] [DELAY ...]
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(inp="inputs/h2plus_moving.toml", repeat=2, delays=(0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.5)):
    counts = {}
    for delay in delays:
        for _ in range(repeat):
            out = tempfile.mkdtemp()
            p = subprocess.Popen([sys.executable, "-m", "tdse.ui.cli", "run", os.path.join(ROOT, inp),
                                  "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, cwd=ROOT)
            time.sleep(delay)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=300)
            counts[p.returncode] = counts.get(p.returncode, 0) + 1
            if p.returncode != 130:
                print(f"delay {delay}: status {p.returncode}: {err.strip().splitlines()[-1]}", flush=True)
    print("exit statuses:", counts, flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0] if a else "inputs/h2plus_moving.toml", int(a[1]) if len(a) > 1 else 2,
         tuple(float(x) for x in a[2:]) or (0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.5))
