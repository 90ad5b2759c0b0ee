"""Regenerate the tables of benchmarks/README.md from results/*.json (never typed by hand)."""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernels_3m  # noqa: E402  (its table, shared with its own printout)
BEGIN, END = "<!-- tables:begin -->", "<!-- tables:end -->"


def tables():
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "results", "*.json"))):
        d = json.load(open(path))
        if d.get("kind") == "mgemm-profile" or "machine" not in d:
            continue  # machine profiles are inputs, summarised in the text
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
            out.append("| N | engine | GPUs | placement | tile | complex | TFLOP/s | fraction of G x 1-GPU "
                       "| vs mgemm native, same GPUs |\n|---|---|---|---|---|---|---|---|---|")
            native = {}  # the best native rate per (N, G, placement), over tiles
            for r in d["rows"]:
                if (r.get("engine") == "mgemm" and r.get("complex_method") == "native"
                        and "tflops" in r and not r.get("balanced")):
                    key = (r["n"], r["gpus"], r.get("placement"))
                    native[key] = max(native.get(key, 0.0), r["tflops"])
            for r in d["rows"]:
                if "tflops" not in r:
                    out.append(f"| {r['n']} | {r['engine']} | {r['gpus']} | {r.get('placement', '')} | "
                               f"{r.get('tile', '')} | {r.get('complex_method', '')} | failed: "
                               f"{r.get('error', '')[:60]} | | |")
                    continue
                ref = native.get((r["n"], r["gpus"], r.get("placement")))
                if ref is None and r.get("engine") != "mgemm":  # baselines: vs placement (ii)
                    ref = native.get((r["n"], r["gpus"], "three"))
                ratio = f"{r['tflops'] / ref:.3f}" if ref else ""
                how = r.get("complex_method", "") + (" balanced" if r.get("balanced") else "")
                out.append(f"| {r['n']} | {r['engine']} | {r['gpus']} | {r.get('placement', '')} | "
                           f"{r.get('tile', '')} | {how} | {r['tflops']:.2f} | "
                           f"{r['fraction']:.3f} | {ratio} |")
        elif d["kind"] == "gemm-sweep":
            out.append("| N | GPUs | A/B/C on | variant | rows per GPU | TFLOP/s | vs native | "
                       "lane start ms | lane end ms |\n|---|---|---|---|---|---|---|---|---|")
            nat = {}   # the best native variant per placement
            for r in d["rows"]:
                if r["complex_method"] == "native":
                    nat[r["placement"]] = max(nat.get(r["placement"], 0.0), r["tflops"])
            for r in d["rows"]:
                ref = nat.get(r["placement"])
                roles = r.get("roles") or ([0, 0, 0] if r["placement"] == "one" else
                                           [0, 1 % r["gpus"], 2 % r["gpus"]])
                out.append(f"| {r['n']} | {r['gpus']} | {'/'.join(map(str, roles))} | "
                           f"{r['variant']} | {'/'.join(map(str, r['rows_per_gpu']))} | "
                           f"{r['tflops']:.2f} | {r['tflops'] / ref if ref else float('nan'):.3f} | "
                           f"{' / '.join(f'{x:.0f}' for x in r['lane_start_ms'])} | "
                           f"{' / '.join(f'{x:.0f}' for x in r['lane_end_ms'])} |")
        elif d["kind"] == "kernels-3m":
            out += kernels_3m.table(d)
        elif d["kind"] == "expm-gpu":
            out.append("| N | engine | GPUs | seconds | rel. error vs eigh | ||U^H U - I||/sqrt(N) | "
                       "speed-up vs fastest library |\n|---|---|---|---|---|---|---|")
            for r in d["rows"]:
                if "seconds" not in r:
                    out.append(f"| {r['n']} | {r['engine']} | {r['gpus']} | failed: "
                               f"{r.get('error', '')[:60]} | | | |")
                    continue
                out.append(f"| {r['n']} | {r['engine']} | {r['gpus']} | {r['seconds']:.3f} | "
                           f"{r['rel_error']:.1e} | {r['unitarity']:.1e} | "
                           f"{r.get('speedup_vs_fastest_library', float('nan')):.2f} |")
        elif d["kind"] == "tune":
            out.append("| N | GPUs | tile | measured s | TFLOP/s | model (refined) s | model (paper) s |\n"
                       "|---|---|---|---|---|---|---|")
            for r in d["rows"]:
                out.append(f"| {r['n']} | {r['gpus']} | {r['tile']} | {r['seconds']:.3f} | "
                           f"{r['tflops']:.1f} | {r['predicted_seconds_refined']:.3f} | "
                           f"{r['predicted_seconds_paper']:.3f} |")
            out.append("\n| N | GPUs | measured best tile | model tile (refined / paper) | "
                       "time error at it (refined / paper) |\n|---|---|---|---|---|")
            for s_ in d["summary"]:
                out.append(f"| {s_['n']} | {s_['gpus']} | {s_['measured_best_tile']} | "
                           f"{s_['predicted_tile_refined']} / {s_['predicted_tile_paper']} | "
                           f"{s_.get('time_error_refined', float('nan')):+.0%} / "
                           f"{s_.get('time_error_paper', float('nan')):+.0%} |")
        elif d["kind"] == "tdse_gpu":
            out.append("| input | N | GPUs | s/step | speed-up vs first row |\n|---|---|---|---|---|")
            for r in d["rows"]:
                out.append(f"| {r['input']} | {r['n']} | {r['gpus']} | {r['step_seconds']:.3f} | "
                           f"{r['speedup_vs_first']:.2f} |")
        out.append("")
    return "\n".join(out)


def main():
    p = os.path.join(HERE, "README.md")
    text = open(p).read()
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    open(p, "w").write(text[:a] + "\n" + tables() + "\n" + text[b:])


if __name__ == "__main__":
    main()
