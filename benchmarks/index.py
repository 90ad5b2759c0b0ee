"""Tables of results, generated from the JSON files (never typed by hand).

:func:`render` turns one result document into markdown lines, :func:`headline` into a
few keyed numbers (what :func:`compare` puts side by side), :func:`write_readme` writes
the results index and every file's table between the markers of benchmarks/README.md.
Files of the one-off scripts that came before the runner (kinds ``gemm``, ``expm-gpu``,
``expm_cpu``, ``tdse_gpu``, ``gemm-sweep``) are rendered like their suites.
"""
from __future__ import annotations

import glob
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
BEGIN, END = "<!-- tables:begin -->", "<!-- tables:end -->"

#: older kinds -> the suite that now makes such files
LEGACY = {"gemm": "engine", "expm-gpu": "expm", "expm_cpu": "expm-cpu", "tdse_gpu": "tdse",
          "gemm-sweep": "sweep-3m"}


def suite_of(doc) -> str:
    k = doc.get("kind", "")
    return LEGACY.get(k, k)


def _engine(d):
    out = ["| N | engine | GPUs | placement | tile | complex | TFLOP/s | fraction of G x 1-GPU "
           "| vs mgemm native, same GPUs |", "|---|---|---|---|---|---|---|---|---|"]
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
                       f"{str(r.get('error', ''))[:60]} | | |")
            continue
        ref = native.get((r["n"], r["gpus"], r.get("placement")))
        if ref is None and r.get("engine") != "mgemm":  # baselines: vs placement (ii)
            ref = native.get((r["n"], r["gpus"], "three"))
        ratio = f"{r['tflops'] / ref:.3f}" if ref else ""
        how = r.get("complex_method", "") + (" balanced" if r.get("balanced") else "")
        out.append(f"| {r['n']} | {r['engine']} | {r['gpus']} | {r.get('placement', '')} | "
                   f"{r.get('tile', '')} | {how} | {r['tflops']:.2f} | "
                   f"{r['fraction']:.3f} | {ratio} |")
    return out


def _sweep(d):
    out = ["| N | GPUs | A/B/C on | variant | rows per GPU | TFLOP/s | vs native | "
           "lane start ms | lane end ms |", "|---|---|---|---|---|---|---|---|---|"]
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
    return out


def _expm(d):
    out = ["| N | engine | GPUs | seconds | rel. error vs eigh | ||U^H U - I||/sqrt(N) | "
           "speed-up vs fastest library |", "|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        if "seconds" not in r:
            out.append(f"| {r['n']} | {r['engine']} | {r['gpus']} | failed: "
                       f"{str(r.get('error', ''))[:60]} | | | |")
            continue
        out.append(f"| {r['n']} | {r['engine']} | {r['gpus']} | {r['seconds']:.3f} | "
                   f"{r['rel_error']:.1e} | {r['unitarity']:.1e} | "
                   f"{r.get('speedup_vs_fastest_library', float('nan')):.2f} |")
    return out


def _expm_plan(d):
    rows = d["rows"]
    sizes = list(rows[0]["sizes"]) if rows else []
    out = ["| method | GPUs | GiB a GPU | largest N (plan) | largest N (leanest) | "
           + " | ".join(f"N = {n}" for n in sizes) + " |", "|---" * (5 + len(sizes)) + "|"]
    for r in rows:
        cells = [(f"{c['bytes_per_gpu_run'] / 2 ** 30:.1f} GiB, {c['stored_powers_run']} powers" if c["fits"]
                  else f"refused ({c['bytes_per_gpu_leanest'] / 2 ** 30:.0f} GiB)") for c in r["sizes"].values()]
        out.append(f"| {r['method']} | {r['gpus']} | {r['free_bytes'] / 2 ** 30:.1f} | {r['largest_n']} | "
                   f"{r['largest_n_leanest']} | " + " | ".join(cells) + " |")
    return out


def _expm_cpu(d):
    out = ["| case | median ms | rel. error | speed-up vs SciPy | products (path) | x its products at one GEMM's rate |",
           "|---|---|---|---|---|---|"]
    for r in d["rows"]:
        prod = f"{r['products']} ({r['path']})" if "products" in r else "--"
        over = f"{r['over_gemm_bound']:.2f}" if "over_gemm_bound" in r else "--"
        out.append(f"| {r['name']} | {1e3 * r['seconds']:.3f} | {r['rel_error']:.2e} | "
                   f"{r['speedup_vs_scipy']:.2f} | {prod} | {over} |")
    return out


def _tune(d):
    out = ["| N | GPUs | complex | placement | tile | measured s | TFLOP/s | model (refined) s | "
           "model (paper) s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        out.append(f"| {r['n']} | {r['gpus']} | {r.get('complex_method', 'native')} | "
                   f"{r.get('placement', 'three')} | {r['tile']} | {r['seconds']:.3f} | "
                   f"{r['tflops']:.1f} | {r['predicted_seconds_refined']:.3f} | "
                   f"{r['predicted_seconds_paper']:.3f} |")
    out += ["", "| N | GPUs | complex | placement | measured best tile | model tile (refined / paper) | "
            "time error at it (refined / paper) |", "|---|---|---|---|---|---|---|"]
    for s in d.get("summary", []):
        out.append(f"| {s['n']} | {s['gpus']} | {s.get('complex_method', 'native')} | "
                   f"{s.get('placement', 'three')} | {s['measured_best_tile']} | "
                   f"{s['predicted_tile_refined']} / {s['predicted_tile_paper']} | "
                   f"{s.get('time_error_refined', float('nan')):+.0%} / "
                   f"{s.get('time_error_paper', float('nan')):+.0%} |")
    return out


def _tdse(d):
    out = ["| input | N | GPUs | s/step | speed-up vs first row | fraction of G x DGEMM |",
           "|---|---|---|---|---|---|"]
    for r in d["rows"]:
        frac = f"{r['fraction_of_G_dgemm']:.2f}" if "fraction_of_G_dgemm" in r else "-"
        out.append(f"| {r['input']} | {r['n']} | {r['gpus']} | {r['step_seconds']:.3f} | "
                   f"{r['speedup_vs_first']:.2f} | {frac} |")
    return out


def _gpu_tests(d):
    c = d.get("counts", {})
    out = [f"{c.get('passed', 0)} passed, {c.get('failed', 0)} failed, {c.get('error', 0)} errors, "
           f"{c.get('skipped', 0)} skipped in {d.get('wall_seconds', 0):.0f} s "
           f"(exit code {d.get('returncode')}"
           f"{'; STOPPED: the tests after the last row did not run' if d.get('returncode') not in (0, 1, None) else ''})"]
    bad = [r for r in d["rows"] if r["outcome"] in ("failed", "error")]
    if bad:
        last = [((r.get("why") or "").strip().splitlines() or [""])[-1][:200] for r in bad]
        out += ["", "| failed test | its traceback's last line |", "|---|---|"] + [
            f"| {r['test']} | {w} |" for r, w in zip(bad, last)]
    return out


def _accuracy(d):
    out = [f"{d.get('input')}: N = {d.get('n')} ({d.get('stencil')}), t_end = {d.get('t_end')}, target "
           f"{d.get('target'):g} in the final psi, {d.get('threads')} BLAS threads", "",
           "| scheme | method | dt | steps | exponentials | error | seconds | vs fastest | x its products' floor |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        if "seconds" not in r:
            out.append(f"| {r['scheme']} | {r['method']} | not reached | | | | | | |")
            continue
        out.append(f"| {r['scheme']} | {r['method']} | {r['dt']:.4g} | {r['steps']} | "
                   f"{r['exponentials']} | {r['error']:.1e} | {r['seconds']:.2f} | "
                   f"{r.get('vs_fastest', float('nan')):.1f} | {r.get('over_products_floor', float('nan')):.2f} |")
    return out


def _step_cost(d):
    out = [f"{d.get('input')}: cfm4 steps, seconds per step (median)", "",
           "| backend | GPUs | N | stencil | mode | method | ms/step | x its products alone | "
           "products or terms | auto's estimate ms/step | auto chooses |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        work = r["products"] if r["products"] is not None else r["chebyshev_terms"]
        pred, over = r.get("predicted_seconds"), r.get("over_floor")
        out.append(f"| {r['backend']} | {r['gpus']} | {r['n']} | {r['stencil']} | {r['mode']} | "
                   f"{r['method']} | {1e3 * r['step_seconds']:.2f} | "
                   f"{'-' if over is None else f'{over:.2f}'} | {work} | "
                   f"{'-' if pred is None else f'{1e3 * pred:.2f}'} | {r.get('auto_chooses', '-')} |")
    return out


def _peak(r):
    p = r.get("peak_gib")
    return " / ".join(f"{v:.1f}" for v in p.values()) if p else "-"


def _expm_profile(d):
    out = ["| N | GPUs | way in/out | seconds | real products | TFLOP/s | one-GPU DGEMM TFLOP/s | "
           "fraction of G x DGEMM | peak GiB per GPU |", "|---|---|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        out.append(f"| {r['n']} | {r['gpus']} | {r.get('way', 'array/replica')} | {r['seconds']:.3f} | "
                   f"{r['products']} | {r['tflops']:.1f} | {r['dgemm_1gpu_tflops']:.1f} | "
                   f"{r['fraction_of_G_dgemm']:.2f} | {_peak(r)} |")
    return out


def _scale(d):
    out = ["| N | GPUs | status | seconds | real products | TFLOP/s | fraction of G x DGEMM | "
           "error vs expm_multiply | norm error | peak GiB per GPU |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        if r["status"] != "ok":
            out.append(f"| {r['n']} | {r['gpus']} | {r['status']} | - | {r['products']} | - | - | - | - | "
                       f"{_peak(r)} |")
            continue
        out.append(f"| {r['n']} | {r['gpus']} | ok | {r['seconds']:.1f} | {r['products']} | "
                   f"{r['tflops']:.1f} | {r['fraction_of_G_dgemm']:.2f} | "
                   f"{r['error_vs_expm_multiply']:.1e} | {r['norm_error']:.1e} | {_peak(r)} |")
    return out


def _propagator(d):
    out = ["| N | engine | GPUs | steps timed | s/step | of its bound | s/period (steps) | unitarity max | vs mgemm | "
           "speed-up vs torch | auto's estimate s/step | auto chooses |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        pred = r.get("predicted_seconds_per_step")
        bound = f"{r['fraction_of_bound']:.2f} of {r['bound']}" if "bound" in r else "-"
        out.append(f"| {r['n']} | {r['engine']} | {r['gpus']} | {r['steps']} | {r['seconds_per_step']:.3f} | {bound} | "
                   f"{r['seconds_per_period']:.1f} ({r['steps_per_period']}) | {r['unitarity_max']:.1e} | "
                   f"{r.get('max_diff_vs_mgemm', float('nan')):.1e} | {r.get('speedup_vs_torch', float('nan')):.2f} | "
                   f"{'-' if pred is None else f'{pred:.3f}'} | {r.get('auto_chooses', '-')} |")
    return out


def _inputs(d):
    out = ["| input | N | steps | BLAS threads | seconds | x its steps alone | time error at t_end (est.) | "
           "excitation mean t>=2 / final | max <H> - <H>(0) | yield |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        e = r.get("time_error") or {}
        te = e.get("error_at_t_end", e.get("error_at_t_end_linear", float("nan")))
        how = {"companion": " (companion, bound)", "estimate": " (local errors carried, bound)"}.get(
            e.get("kind"), " (window, linear)" if e else "")
        flux = f" / {r['yield_flux_final']:.3g} (flux)" if "yield_flux_final" in r else ""
        out.append(f"| {r['input']} | {r['n']} | {r['steps']} | {r['threads']} | {r['seconds']:.1f} | "
                   f"{r.get('over_bare_steps', float('nan')):.2f} | {te:.1e}{how} | {r['excitation_mean_t_ge_2']:.3g} / {r['excitation_final']:.3g} | "
                   f"{r['energy_rise_max']:.3g} | {r['yield_final']:.3g}{flux} |")
    return out


def _absorber(d):
    out = ["| width (bohr) | strength (Ha) | k0 | energy (Ha) | reflected norm |", "|---|---|---|---|---|"]
    for r in d["rows"]:
        out.append(f"| {r['width']:g} | {r['strength']:.3g} | {r['k0']:g} | {r['energy']:g} | "
                   f"{r['reflected']:.1e} |")
    return out


def _formulas(d):
    out = ["| theta | path | products before (PS) | products after | scheme after | error before | error after |",
           "|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        out.append(f"| {r['theta']:g} | {r['path']} | {r['products_before']} | {r['products_after']} | "
                   f"{r['scheme_after']} | {r['error_before']:.1e} | {r['error_after']:.1e} |")
    return out


def _scan(d):
    out = ["| input | backend | members | batches | steps | N | scan s | s / member | serial s each | serial timed | speedup | max rel diff | x its operator products alone | `tdse scan` wall s (x the scan) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        out.append(f"| {r['input']} | {r['backend']}{' x' + str(r['workers']) + ' workers' if r.get('workers') else ''}"
                   f"{' on ' + str(r['gpus']) + ' GPUs (Dask scheduler)' if r.get('gpus') else ''} "
                   f"| {r['members']} | {r['batches']} | {r['steps']} | {r['n']} | {r['scan_seconds']:.1f} | "
                   f"{r['seconds_per_member']:.3g} | {r['serial_seconds_each']:.2f} | "
                   f"{r['serial_runs_timed']}{' (extrapolated)' if r['serial_extrapolated'] else ''} | "
                   f"{r['speedup']:.1f}x | {r['max_rel_diff_acceleration']:.1e} | "
                   f"{_x(r.get('scan_over_operator_floor'))} | "
                   + (f"{r['cli_wall_seconds']:.1f} ({_x(r['cli_over_scan'])})" if r.get("cli_wall_seconds") else "--")
                   + " |")
    return out


def _x(v):
    return "--" if v is None else f"x{v:.2f}"


def _ms(v):
    return "--" if v is None else f"{1e3 * v:.3g}"


def _small_n(d):
    out = ["| N | method | graph ms/step | launched ms/step | CPU ms/step (threads) | dynamiqs ms/step-span | nodes | launch bound ms | bandwidth bound ms | auto | auto / best | GPU vs CPU diff | dynamiqs diff |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        cpu = f"{_ms(r.get('cpu_s'))} ({r.get('cpu_threads', '')})" if r.get("cpu_s") else "--"
        dq = _ms(r.get("dynamiqs_s")) if "dynamiqs_s" in r else ("error" if "dynamiqs_error" in r else "--")
        diff = r.get("gpu_vs_cpu_max_diff")
        out.append(f"| {r['n']} | {r['method']} | {_ms(r['gpu_graph_s'])} | {_ms(r.get('gpu_launched_s'))} | "
                   f"{cpu} | {dq} | {r.get('graph_nodes_per_step') or '--'} | {_ms(r.get('launch_bound_s'))} | "
                   f"{_ms(r.get('bandwidth_bound_s'))} | {r['auto']} | "
                   f"{'--' if r.get('auto_over_best') is None else format(r['auto_over_best'], '.2f')} | "
                   f"{'--' if diff is None else format(diff, '.1e')} | "
                   f"{format(r['dynamiqs_max_diff'], '.1e') if 'dynamiqs_max_diff' in r else '--'} |")
    s = d.get("single_run")
    if s:
        dq = f"{s['dynamiqs_s']:.2f} s" if "dynamiqs_s" in s else "--"
        out += ["", f"{s['input']} itself (N = {s['n']}, {s['steps']} steps, {s['method']}), bare stepping:",
                "", "| GPU, an exponential a kernel | GPU, a kernel a term | CPU (threads) | dynamiqs (no absorber) | chain vs terms | GPU vs CPU |",
                "| --- | --- | --- | --- | --- | --- |",
                f"| {s['gpu_chain_s']:.3f} s ({s['gpu_chain_nodes_per_step']} nodes) | "
                f"{s['gpu_terms_s']:.3f} s ({s['gpu_terms_nodes_per_step']} nodes) | "
                f"{s['cpu_s']:.2f} s ({s['cpu_threads']}) | {dq} | {s['chain_vs_terms_max_diff']:.1e} | "
                f"{s['gpu_vs_cpu_max_diff']:.1e} |"]
    return out


def _start_up(d):
    out = ["| input | backend | wall s | printed s | printed / wall | before prepare | prepare | set-up | "
           "loop | to close | close and exit | wall with plots s |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        p, wp = r["phases"], r.get("wall_with_plots_seconds")
        out.append(f"| {r['input']} | {r['backend']} | {r['wall_seconds']:.2f} | {r['printed_seconds']:.2f} | "
                   f"{r['printed_share']:.2f} | " + " | ".join(f"{p[k]:.2f}" for k in (
                       "before_prepare", "prepare", "set_up", "loop", "to_close", "close_and_exit"))
                   + f" | {'--' if wp is None else format(wp, '.2f')} |")
    return out


def _run_overhead(d):
    # "run / bare": the CLI's walls; "start-up apart": the same with the run's start-up phases
    # apart (the target's "steps x step time + start-up"); then the run's own loop clock
    out = ["| N | stencil | method | backend | steps | obs every | H(t) pops every | bare ms/step | in run ms/step | run / bare | start-up apart | run's loop / bare | loop / bare around it | loop's slope / bare | start-up s | fixed s | wall s | wall with companion s |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    opt = lambda r, k, f: format(r[k], f) if r.get(k) is not None else "--"  # noqa: E731 -- older records lack it
    for r in d["rows"]:
        out.append(f"| {r['n']} | {r['stencil']} | {r['method']} | {r['backend']} | {r['steps']} | "
                   f"{r['observables_every']} | {r.get('populations_every', r['observables_every'])} | {_ms(r['step_seconds_bare'])} | {_ms(r['step_seconds_in_run'])} | "
                   f"{r['wall_over_steps']:.2f} | {opt(r, 'wall_over_steps_start_up_apart', '.3f')} | "
                   f"{opt(r, 'loop_over_steps', '.2f')} | {opt(r, 'loop_over_bare_around_full', '.2f')} | "
                   f"{opt(r, 'loop_slope_over_steps', '.2f')} | {opt(r, 'start_up_seconds', '.2f')} | "
                   f"{r['fixed_seconds']:.2f} | {r['cli_wall_seconds']:.2f} | "
                   f"{opt(r, 'cli_wall_with_companion_seconds', '.2f')} |")
    return out


def _formula(d):
    out = ["| input | N | backend | method | soft-core us/step | formula us/step | formula / soft-core | final psi apart |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        st = r["step_seconds"]
        out.append(f"| {r['input']} | {r['n']} | {r['backend']} | {r['method']} | {st['soft_core'] * 1e6:.1f} | "
                   f"{st['formula'] * 1e6:.1f} | {r['ratio_formula_over_soft_core']:.3f} | "
                   f"{r['final_psi_max_abs_diff']:.1e} |")
        if "ratio_callable_over_soft_core" in r:
            out.append(f"\nthe molecule as a Python function: {st['callable'] * 1e6:.1f} us/step, "
                       f"x{r['ratio_callable_over_soft_core']:.3f} of the soft-core step "
                       f"(final psi {r['callable_final_psi_max_abs_diff']:.1e} apart)")
    return out


def _tsurff(d):
    out = ["| input | gauge | backend | N | steps | R | bare s | with t-SURFF s | ratio | us a step |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        if r.get("part") == "cli":
            continue
        out.append(f"| {r['input']} | {r.get('gauge', 'length')} | {r.get('backend', 'numpy')} | {r['n']} | "
                   f"{r['steps']} | {r['radius']:g} | {r['seconds']['bare']:.2f} | "
                   f"{r['seconds']['tsurff']:.2f} | {r['ratio']:.3f} | {r['us_per_step']:.1f} |")
    for r in d["rows"]:
        if r.get("part") == "cli":
            out += ["", f"`tdse run {r['input']} --no-plots` ({r['backend']}): {r['wall']['bare']:.2f} s, with "
                        f"t-SURFF {r['wall']['tsurff']:.2f} s: x{r['ratio']:.3f} of the run's wall"]
    if "velocity_over_length_bare" in d:
        out += ["", f"velocity gauge / length gauge, bare loop: x{d['velocity_over_length_bare']:.2f}"]
    return out


def _time_error(d):
    out = [f"backend {d.get('backend', 'numpy')}, seed {d.get('seed')}", "",
           "| part | case | N | steps | seconds (none) | estimate x | companion x | stated / true: estimate, companion |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        if r["part"] in ("cost", "cost-input"):
            st = r.get("stated_over_true") or {}
            ratio = (f"{st['estimate']:.2f}, {st['companion']:.2f}" if st else
                     f"stated {r['stated'].get('estimate', float('nan')):.2g}, "
                     f"{r['stated'].get('companion', float('nan')):.2g}")
            out.append(f"| {r['part']} | {r.get('kind', r.get('input'))} | {r['n']} | {r['steps']} | "
                       f"{r['seconds']['none']:.2f} | {r['estimate_over_none']:.2f} | "
                       f"{r['companion_over_none']:.2f} | {ratio} |")
    out += ["", "| adaptive: tolerance | seconds | steps | true error | stated | fixed dt as accurate | "
                "x its wall (none) | x its wall (estimate) |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        if r["part"] == "adaptive":
            f = r.get("fixed_as_accurate") or {}
            fx = (f"{f['dt']:.4g} ({f.get('steps', '-')} steps, true {f['true_error']:.2g})"
                  if f else "-")
            out.append(f"| {r['tolerance']:g} | {r['seconds']:.2f} | {r['steps']} | {r['true_error']:.2g} | "
                       f"{r['stated']:.2g} | {fx} | {r['over_fixed_none'] or float('nan'):.2f} | "
                       f"{r['over_fixed_estimate'] or float('nan'):.2f} |")
    for r in (r for r in d["rows"] if r["part"] == "dynamiqs"):
        out += ["", f"| adaptive (N = {r['n']}, no absorber): tolerance | seconds | true error | dynamiqs "
                    "Dopri8 as accurate: rtol | its seconds | ours / its |", "| --- | --- | --- | --- | --- | --- |"]
        for o in r["ours"]:
            b = o.get("dynamiqs_as_accurate") or {}
            out.append(f"| {o['tolerance']:g} | {o['seconds']:.3f} | {o['true_error']:.2g} | {b.get('rtol', '-')} | "
                       f"{b.get('seconds', float('nan')):.3f} | {o['over_dynamiqs'] or float('nan'):.2f} |")
    scans = [r for r in d["rows"] if r["part"].startswith("scan-")]
    if scans:
        out += ["", "| scan: members | fixed dt: none s, estimate x | adaptive: tolerance | shared s (steps) | "
                    "split s (steps a member) | shared / split |", "| --- | --- | --- | --- | --- | --- |"]
        cost = {r["members"]: r for r in scans if r["part"] == "scan-cost"}
        for r in (r for r in scans if r["part"] == "scan-adaptive"):
            c, sh, sp = cost.get(r["members"], {}), r["shared"], r["split"]
            out.append(f"| {r['members']} | {c['seconds']['none']:.2f}, x{c['estimate_over_none']:.2f} | "
                       f"{r['tolerance']:g} | {sh['seconds']:.2f} ({sh['steps'][0]}) | {sp['seconds']:.2f} "
                       f"({min(sp['steps'])}-{max(sp['steps'])}) | {r['shared_over_split']:.2f} |")
    return out


def _gauge(d):
    ref = d.get("reference", {})
    out = [f"reference: the DVR at dx = {ref.get('dx')} (gauges apart by {ref.get('gauges_apart')})", "",
           "| stencil | dx | gauge | N | seconds | yield | yield error | populations error | "
           "acceleration error (of its peak) | abs(psi)^2 error (L1) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        out.append(f"| {r['stencil']} | {r['dx']:g} | {r['gauge']} | {r['n']} | {r['seconds']:.1f} | "
                   f"{r['yield']:.4g} | {r['yield_error']:.2g} | {r['population_error']:.2g} | "
                   f"{r['acceleration_error']:.2g} | {r['density_error']:.2g} |")
    return out


def _mutation(d):
    out = [f"{d.get('tool', '')}, commit {d.get('commit', '')}: "
           + ("complete" if d.get("complete") else f"incomplete -- {d.get('why_incomplete', '')}"), "",
           "| module | mutants | killed | survived | timed out | not checked | equivalent |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        killed = r.get("killed")
        if killed is None and any(k.startswith("killed") for k in r):   # killed in several ways
            killed = sum(v for k, v in r.items() if (k.startswith("killed") or k.startswith(
                "unchanged_and_killed")) and isinstance(v, int))
        out.append(f"| {r['module']} | {r.get('mutants')} | {killed} | {r.get('survived')} | "
                   f"{r.get('timed_out', 0)} | {r.get('not_checked', 0)} | {r.get('equivalent', '')} |")
    for s in d.get("survivors", []):
        out.append(f"\nsurvivor `{s['mutant']}`: {s['change']} -- {s['verdict']}")
    return out


def _expm_pool(d):
    out = [f"N = {d['n']} on {d['device']}: {d.get('result', '')}", "",
           "| dtype | path | method | formula | degree | q | squarings | pool measured | predicted | predicted - measured (matrices) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        out.append(f"| {r['dtype']} | {r['path']} | {r['method']} | {r['formula']} | {r['degree']} | "
                   f"{r['q']} | {r['squarings']} | {r['pool_measured']} | {r['predicted']} | "
                   f"{r['diff_matrices']:.2f} |")
    return out


def _block_kinetic(d):
    out = [f"N = {d['n']}; the serial run's one-column Operator call (FFT): "
           f"{d['serial_operator_ms_per_call']:.3f} ms", "",
           "| members | BLAS threads | full GEMM ms (GFLOP/s) | halves ms | block FFT ms | whole term ms | per member ms | term with the full GEMM ms |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        full = f"{r['term_full_gemm_ms']:.3f}" if "term_full_gemm_ms" in r else "--"
        out.append(f"| {r['members']} | {r['blas_threads']} | {r['full_gemm_ms']:.3f} ({r['full_gemm_gflops']:.0f}) | "
                   f"{r['halves_ms']:.3f} | {r['fft_ms']:.3f} | {r['term_ms']:.3f} | {r['term_ms_per_member']:.4f} | {full} |")
    return out


def _kernels(d):
    from .kernels_3m import table
    return table(d)


def _nuclei(d):
    rows = d["rows"]
    if rows and "set" in rows[0]:            # --converge: the input and its variants
        out = ["| variant | dissociated | ionised | bound | KER peaks (eV) | KER mean (eV) | loop s |",
               "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            out.append(f"| {r['set'] or 'as given'} | {r['dissociated']:.6f} | {r['ionised']:.6f} | "
                       f"{r['bound']:.6f} | {', '.join(f'{p:.3f}' for p in r['ker_peaks_eV'])} | "
                       f"{r['ker_mean_eV']:.4f} | {r['loop_s']:.0f} |")
        return out
    out = ["| grid | backend | path | GPUs | threads | step ms | terms | term us | TFLOP/s a term | "
           "GEMMs alone TFLOP/s (real, complex) | GEMM share | of the GPUs' GEMM rate | of the GPUs' DGEMM peak | speed-up |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        gpus = r.get("gpus", 1) if r["backend"] != "numpy" else "-"
        peak = f"{r['of_dgemm_peak']:.2f}" if "of_dgemm_peak" in r else "-"
        out.append(f"| {r['grid'][0]} x {r['grid'][1]} | {r['backend']} | {r.get('path', 'apply')} | {gpus} | "
                   f"{r.get('threads', 'all')} | {r['step_s'] * 1e3:.1f} | {r['terms_per_step']:.0f} | "
                   f"{r['term_s'] * 1e6:.0f} | {r['term_tflops']:.3f} | {r['gemm_tflops'][0]:.2f}, "
                   f"{r['gemm_tflops'][1]:.2f} | {r['gemm_share']:.2f} | "
                   f"{r.get('of_gemm_rate', r['gemm_share']):.2f} | {peak} | {r.get('speedup', 1.0):.2f} |")
    return out


def _mid_step(d):
    """#59 item 3: one run's stencil step, an exponential as one tiled kernel against a node a
    term and launched, with the tile's bounds (us a step)."""
    us = lambda v: "--" if v is None else f"{1e6 * v:.1f}"  # noqa: E731
    out = ["| N | stencil | scheme | terms | loop, tiled | device, tiled | latency bound | launch bound | "
           "bandwidth bound | device / latency bound | loop, a node a term (device) | launched | tiled vs launched |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        ratio = r.get("tile_device_over_latency_bound")
        out.append(f"| {r['n']} | {r['stencil']} | {r['scheme']} | {r['terms_per_exponential']:.0f} | "
                   f"{us(r['tile_step_s'])} | {us(r['tile_device_s'])} | {us(r.get('tile_latency_bound_s'))} | "
                   f"{us(r['tile_launch_bound_s'])} | {us(r['tile_bandwidth_bound_s'])} | "
                   f"{'--' if ratio is None else format(ratio, '.1f')} | "
                   f"{us(r['terms_step_s'])} ({us(r['terms_device_s'])}) | {us(r['launched_step_s'])} | "
                   f"{r['tile_vs_launched_max_diff']:.1e} |")
    return out


RENDER = {"nuclei": _nuclei, "mid-step": _mid_step, "engine": _engine, "sweep-3m": _sweep, "expm": _expm, "expm-cpu": _expm_cpu,
          "expm-plan": _expm_plan,
          "tune": _tune, "tdse": _tdse, "gpu-tests": _gpu_tests, "kernels-3m": _kernels,
          "accuracy": _accuracy, "step-cost": _step_cost, "expm-profile": _expm_profile,
          "propagator": _propagator, "inputs": _inputs, "absorber": _absorber,
          "formulas": _formulas, "scale": _scale, "scan": _scan,
          "mutation": _mutation, "small-n": _small_n, "run-overhead": _run_overhead, "start-up": _start_up,
          "expm-pool": _expm_pool, "block-kinetic": _block_kinetic, "formula": _formula,
          "tsurff": _tsurff, "time-error": _time_error, "gauge": _gauge}


def render(doc) -> list[str]:
    f = RENDER.get(suite_of(doc))
    return f(doc) if f else [f"({len(doc.get('rows', []))} rows of kind {doc.get('kind')!r})"]


def headline(doc) -> dict:
    """A few keyed numbers of a result file (what reproducing a run compares)."""
    s, out = suite_of(doc), {}
    for r in doc.get("rows", []):
        if s == "engine" and "tflops" in r:
            key = (f"N={r['n']} {r['engine']} G={r['gpus']} {r.get('placement', '')} "
                   f"tile={r.get('tile', '')} {r.get('complex_method', '')}"
                   f"{' balanced' if r.get('balanced') else ''} TFLOP/s")
            out[key] = r["tflops"]
        elif s == "expm" and "seconds" in r:
            out[f"N={r['n']} {r['engine']} G={r['gpus']} s"] = r["seconds"]
        elif s == "expm-cpu":
            out[f"{r['name']} ms"] = 1e3 * r["seconds"]
        elif s == "tdse":
            out[f"{os.path.basename(r['input'])} N={r['n']} G={r['gpus']} s/step"] = r["step_seconds"]
        elif s == "tune":
            out[f"N={r['n']} G={r['gpus']} {r.get('complex_method', 'native')} "
                f"{r.get('placement', 'three')} tile={r['tile']} TFLOP/s"] = r["tflops"]
        elif s == "sweep-3m":
            out[f"N={r['n']} G={r['gpus']} {r['placement']} {r['variant']} TFLOP/s"] = r["tflops"]
        elif s == "inputs":
            out[f"{r['input']} threads={r['threads']} s"] = r["seconds"]
        elif s == "scan":
            out[f"{r['input']} {r['backend']} {r['members']} members s"] = r["scan_seconds"]
        elif s == "small-n":
            out[f"N={r['n']} {r['method']} graph s/step"] = r["gpu_graph_s"]
        elif s == "mid-step":
            out[f"N={r['n']} {r['stencil']}-point {r['scheme']} tiled s/step"] = r["tile_step_s"]
        elif s == "start-up":
            out[f"{r['input']} {r['backend']} wall s"] = r["wall_seconds"]
        elif s == "run-overhead":
            out[f"N={r['n']} {r['stencil']} {r['backend']} run/bare"] = r["wall_over_steps"]
        elif s == "absorber":
            out[f"width {r['width']:g} k0 {r['k0']:g} reflected"] = r["reflected"]
        elif s == "propagator":
            out[f"N={r['n']} {r['engine']} G={r['gpus']} s/step"] = r["seconds_per_step"]
        elif s == "expm-profile":
            out[f"N={r['n']} G={r['gpus']} expm fraction of G x DGEMM"] = r["fraction_of_G_dgemm"]
        elif s == "step-cost":
            out[f"{r['backend']} G={r['gpus']} N={r['n']} {r['stencil']} {r['mode']} {r['method']} s/step"] = r["step_seconds"]
        elif s == "accuracy" and "seconds" in r:
            out[f"{r['scheme']} {r['method']} s to target"] = r["seconds"]
        elif s == "kernels-3m" and r.get("eff_tflops"):
            out.setdefault(f"tile {r['tile']} {r['case']} TFLOP/s", r["eff_tflops"])
    if s == "gpu-tests":
        out.update({f"tests {k}": v for k, v in doc.get("counts", {}).items()})
    if s == "tune":
        for x in doc.get("summary", []):
            out[f"N={x['n']} G={x['gpus']} {x.get('complex_method', 'native')} "
                f"{x.get('placement', 'three')} best tile"] = x["measured_best_tile"]
    return out


def _json(path):
    """A JSON file's document (the file closed)."""
    with open(path) as fh:
        return json.load(fh)


def compare(new_path, old_path) -> list[str]:
    """Lines: every headline number the two files share, new / old."""
    new, old = (_json(p) for p in (new_path, old_path))
    for d in (new, old):
        d.setdefault("machine", {"gpus": (d.get("profile") or {}).get("gpus") or []})
    hn, ho = headline(new), headline(old)
    common = [k for k in hn if k in ho]
    out = [f"new: {new_path} ({new.get('date')}, {', '.join(new['machine'].get('gpus') or [])})",
           f"old: {old_path} ({old.get('date')}, {', '.join(old['machine'].get('gpus') or [])})",
           f"{'quantity':70s} {'new':>10s} {'old':>10s} {'new/old':>8s}"]
    for k in common:
        a, b = hn[k], ho[k]
        ratio = f"{a / b:8.3f}" if isinstance(b, (int, float)) and b else ""
        out.append(f"{k:70s} {a:10.4g} {b:10.4g} {ratio}")
    if not common:
        out.append("(no quantity in common)")
    return out


def _files():
    return sorted(glob.glob(os.path.join(HERE, "results", "*.json")))


def _docs():
    """[(file name, result)] of every result file (machine profiles apart)."""
    docs = []
    for path in _files():
        d = _json(path)
        if not isinstance(d, dict):
            raise ValueError(f"{path}: not a result file (a JSON object with its kind, date and "
                             f"machine); a probe's own output belongs in a .txt beside it")
        if d.get("kind") == "mgemm-profile":
            continue  # machine profiles are inputs, summarised in the text
        if "machine" not in d:  # an early tune file: its profile names the GPUs
            d["machine"] = {"gpus": (d.get("profile") or {}).get("gpus") or []}
        docs.append((os.path.basename(path), d))
    return docs


#: a result file named as the runner names it (SUITE_MACHINE_DATE.json); others carry a label
#: after the date (a baseline tree, a variant tried): the current numbers prefer the plain ones
PLAIN = re.compile(r"^[a-z0-9-]+_[a-z0-9]+_[0-9]{8}T[0-9]{4,6}\.json$")


def current() -> str:
    """RESULTS.md's generated part: for each suite and machine the newest result file (by its
    date; a plainly named one before a labelled one), its command and its table."""
    from .runner import machine_tag
    newest = {}
    for name, d in _docs():
        key = (suite_of(d), machine_tag(d["machine"]))
        rank = (bool(PLAIN.match(name)), d.get("date", ""), name)
        if key not in newest or rank > newest[key][0]:
            newest[key] = (rank, name, d)
    out = ["| suite | machine | date | file | headline |", "| --- | --- | --- | --- | --- |"]
    for (suite, tag), (_, name, d) in sorted(newest.items()):
        h = headline(d)
        best = f"{next(iter(h))} = {h[next(iter(h))]:.4g}" if h else ""
        out.append(f"| {suite} | {tag} | {d.get('date', '')[:10]} | [`{name}`](results/{name}) | {best} |")
    out.append("")
    for (suite, tag), (_, name, d) in sorted(newest.items()):
        out.append(f"### {suite} on {tag}\n`{name}`, {d.get('date', '')}; `{d.get('command', '')}`\n")
        out += render(d)
        out.append("")
    return "\n".join(out)


def _hardware(m, gpus) -> str:
    """A result's machine in words: its GPUs (and, where recorded, the host's CPU model) or
    its CPUs."""
    model = m.get("cpu_model")
    if gpus:
        return f"{gpus} (host {model})" if model else gpus
    return f"{m.get('cpus')} CPUs ({model or m.get('processor')})"


def tables() -> str:
    """The results index and one section per result file."""
    docs = _docs()
    out = ["### Index", "", "| file | suite | date | machine | headline |", "|---|---|---|---|---|"]
    for name, d in docs:
        m = d["machine"]
        hw = _hardware(m, f"{len(m['gpus'])} x {m['gpus'][0]}" if m.get("gpus") else None)
        h = headline(d)
        best = ""
        if h:
            keys = [k for k in h if " mgemm " in k] or list(h)
            k = (max(keys, key=lambda k: h[k]) if suite_of(d) in ("engine", "tune", "sweep-3m")
                 else keys[0])
            best = f"{k} = {h[k]:.4g}"
        out.append(f"| [{name}](#{name.replace('.', '').lower()}) | {suite_of(d)} | "
                   f"{d.get('date', '')[:16]} | {hw} | {best} |")
    out.append("")
    for name, d in docs:
        m = d["machine"]
        hw = _hardware(m, ", ".join(m.get("gpus") or []) or None)
        out.append(f"### {name}\n{d.get('date', '')} on {hw}; `{d.get('command', '')}`\n")
        out += render(d)
        out.append("")
    return "\n".join(out)


def write_readme(path=None, make=None) -> str:
    """The generated part of ``path`` (default README.md: :func:`tables`; RESULTS.md is
    written with ``make`` = :func:`current`), between its markers."""
    path = path or os.path.join(HERE, "README.md")
    with open(path) as fh:
        text = fh.read()
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:a] + "\n" + (make or tables)() + "\n" + text[b:]   # made before the file is
    tmp = path + ".part"                                  # opened: a failure leaves it as it was
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, path)
    return path


def write_results(path=None) -> str:
    """benchmarks/RESULTS.md's current numbers (:func:`current`)."""
    return write_readme(path or os.path.join(HERE, "RESULTS.md"), current)


def write_tiles(files, path=None) -> str:
    """Merge the measured best tiles of tune result files into mgemm/data/tiles.json, one
    table per GPU model (the newest measurement of a case wins); each entry names its file."""
    from mgemm.profile import tuned_entries
    path = path or os.path.join(os.path.dirname(HERE), "mgemm", "data", "tiles.json")
    try:
        doc = _json(path)
    except FileNotFoundError:
        doc = {"kind": "mgemm-tiles", "tables": []}
    doc["about"] = ("best tiles measured by `mgemm tune` / `python -m benchmarks tune` per GPU "
                    "model; regenerate with `python -m benchmarks tiles FILES`")
    tables = {t["gpu"]: t for t in doc["tables"]}
    for f in files:
        d = _json(f)
        gpus = (d.get("machine") or {}).get("gpus") or (d.get("profile") or {}).get("gpus") or []
        if d.get("kind") != "tune" or not gpus:
            raise ValueError(f"{f}: not a tune result with its GPUs named")
        model = gpus[0].replace("NVIDIA ", "").split()[0]
        t = tables.setdefault(model, {"gpu": model, "sources": [], "tuned": []})
        rows = d.get("rows") or [{}]
        old = {"dtype": rows[0].get("dtype", "complex128"), "complex_method": "native",
               "placement": "three"}   # the first tune files named neither
        summary = [dict(old, **s, source=os.path.basename(f)) for s in d["summary"]]
        merged = tuned_entries({"tuned": t["tuned"]}, summary)
        src = {(s["dtype"], s["complex_method"], s["gpus"], s["n"], s["placement"]): s["source"]
               for s in summary}
        for e in merged:
            key = (e["dtype"], e["complex_method"], e["gpus"], e["n"], e["placement"])
            if key in src:
                e["source"] = src[key]
        t["tuned"] = merged
        if os.path.basename(f) not in t["sources"]:
            t["sources"].append(os.path.basename(f))
    doc["tables"] = sorted(tables.values(), key=lambda t: t["gpu"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1)
    return path
