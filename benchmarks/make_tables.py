"""Regenerate the tables of benchmarks/README.md from results/*.json (never typed by hand)."""
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
BEGIN, END = "<!-- tables:begin -->", "<!-- tables:end -->"


def tables():
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "results", "*.json"))):
        d = json.load(open(path))
        name = os.path.basename(path)
        m = d["machine"]
        hw = ", ".join(m.get("gpus") or []) or f"{m.get('cpus')} CPUs ({m.get('processor')})"
        out.append(f"### {name}\n{d['date']} on {hw}; `{d['command']}`\n")
        if d["kind"] == "expm_cpu":
            out.append("| case | median ms | rel. error | speed-up vs SciPy |\n|---|---|---|---|")
            for r in d["rows"]:
                out.append(f"| {r['name']} | {1e3 * r['seconds']:.3f} | {r['rel_error']:.2e} | "
                           f"{r['speedup_vs_scipy']:.2f} |")
        elif d["kind"] == "gemm":
            out.append("| N | engine | GPUs | placement | tile | complex | TFLOP/s | fraction of G x 1-GPU |\n"
                       "|---|---|---|---|---|---|---|---|")
            for r in d["rows"]:
                if "tflops" not in r:
                    out.append(f"| {r['n']} | {r['engine']} | {r['gpus']} | {r.get('placement', '')} | "
                               f"{r.get('tile', '')} | {r.get('complex_method', '')} | failed: "
                               f"{r.get('error', '')[:60]} | |")
                    continue
                out.append(f"| {r['n']} | {r['engine']} | {r['gpus']} | {r.get('placement', '')} | "
                           f"{r.get('tile', '')} | {r.get('complex_method', '')} | {r['tflops']:.2f} | "
                           f"{r['fraction']:.3f} |")
        out.append("")
    return "\n".join(out)


def main():
    p = os.path.join(HERE, "README.md")
    text = open(p).read()
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    open(p, "w").write(text[:a] + "\n" + tables() + "\n" + text[b:])


if __name__ == "__main__":
    main()
