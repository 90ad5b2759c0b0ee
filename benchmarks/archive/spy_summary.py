"""Summarise a py-spy raw profile of a `tdse run` process (``py-spy record --idle --threads
-f raw``): the main thread's samples inside the evolve loop (``_steps``) by the loop's call
they fall in and by leaf frame, and the other threads' leaves.  With ``--idle`` a sample
in a call that waits (CUDA's full queue, a lock) counts as that call's: the split says
where the loop's thread is, not what it computes.  py-spy's ``--nonblocking`` samples may
tear a stack (a parent from one moment, a leaf from the next): read the large counts.

    python -m benchmarks.archive.spy_summary SPY_RAW.txt [...]
"""
import collections
import sys


def summary(fn):
    threads, child, leaf, other = (collections.Counter() for _ in range(4))
    in_loop = 0
    for line in open(fn):
        stack, _, n = line.rstrip().rpartition(" ")
        n, frames = int(n), stack.split(";")
        main = "MainThread" in frames[0]
        threads["MainThread" if main else frames[0].split(":")[-1].strip()] += n
        if not main:
            other[(frames[0].split(":")[-1].strip(), frames[-1])] += n
            continue
        at = [i for i, f in enumerate(frames) if f.startswith("_steps (")]
        if not at:
            continue
        in_loop += n
        i = at[0]
        child[frames[i] + " > " + (frames[i + 1] if i + 1 < len(frames) else "-")] += n
        leaf[frames[-1]] += n
    print(f"{fn}: samples by thread {threads.most_common(8)}")
    print(f"  the loop's samples (main thread): {in_loop}")
    for k, v in child.most_common(12):
        print(f"  {v:6d} {100 * v / in_loop:5.1f}%  {k}")
    print("  leaves:")
    for k, v in leaf.most_common(20):
        print(f"  {v:6d} {100 * v / in_loop:5.1f}%  {k}")
    print("  other threads' leaves:")
    for k, v in other.most_common(12):
        print(f"  {v:6d}  {k}")


if __name__ == "__main__":
    for f in sys.argv[1:]:
        summary(f)
