"""The tile-size model (mgemm.model): closed forms against the paper's fp32 formulas,
consistency of the bounds with the times they bound, monotonicity, dtype factors, bad
parameters, the CLI and the profile used by tile='auto'."""
import json
import math

import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from mgemm.cli import main as mgemm_cli
from mgemm.executors.common import resolve_tile
from mgemm.profile import hardware_from_profile
from mgemm.model import (Hardware, best_tile, bounds, candidates, dtype_factors, model_report,
                         predict)

H200 = Hardware(bw_math=50e12, bw_mem=4.8e12, bw_transfer=391e9, latency=10e-6)

rates = st.floats(min_value=1e9, max_value=1e16, allow_nan=False)


def test_fp32_closed_forms_are_the_papers():
    hw = Hardware(bw_math=19.5e12, bw_mem=1.5e12, bw_transfer=250e9, latency=0.0)
    n, g, t = 32768, 4, 2048
    k = hw.bw_math / hw.bw_mem
    bd = bounds(n, g, hw, "float32")
    assert bd["eq4"] == pytest.approx(4 * k * n / (n - 2 * k), rel=1e-12)
    assert bd["eq12"] == pytest.approx(2 * (g - 1) * hw.bw_math / hw.bw_transfer, rel=1e-12)
    assert bd["eq13"] == pytest.approx(max(0.0, n * ((g - 1) * hw.bw_mem / hw.bw_transfer - 2)))
    p = predict(n, g, t, hw, "float32", variant="paper")
    assert p.t_math == pytest.approx(2 * t * t * n / hw.bw_math)
    assert p.t_mem == pytest.approx((8 * n * t + 4 * t * t) / hw.bw_mem)
    assert p.t_transfer == pytest.approx(4 * t * n / hw.bw_transfer)
    assert p.intensity == pytest.approx(t * n / (4 * n + 2 * t))
    assert p.t_kernel == pytest.approx(max(p.t_gemm, (g - 1) * p.t_transfer))
    assert p.t_task == pytest.approx(3 * p.t_transfer + n / (t * g) * p.t_kernel)


def test_refined_counts_every_tile_and_the_imbalance():
    n, g = 16384, 4
    for t in (1024, 2048, 8192):
        p = predict(n, g, t, H200, "complex128")
        bands = n // t
        assert p.t_task == pytest.approx(3 * p.t_transfer + math.ceil(bands / g) * bands * p.t_kernel)
    # N/N_i = 2 bands on 4 GPUs: two GPUs idle, so no faster than tile 4096 on 4 bands
    assert predict(n, g, 8192, H200, "complex128").t_task > predict(n, g, 4096, H200, "complex128").t_task


@settings(max_examples=200, deadline=None)
@given(bw_math=rates, bw_mem=rates, bw_tr=rates, n=st.integers(64, 1 << 17),
       g=st.integers(1, 16), e=st.integers(0, 17),
       dtype=st.sampled_from(["float32", "float64", "complex64", "complex128"]))
def test_bounds_agree_with_the_times(bw_math, bw_mem, bw_tr, n, g, e, dtype):
    hw = Hardware(bw_math, bw_mem, bw_tr)
    t = min(n, 2 ** e)
    bd = bounds(n, g, hw, dtype)
    p = predict(n, g, t, hw, dtype)
    # eq. 4 <=> math-bound (away from the boundary, where rounding decides)
    if t > bd["eq4"] * (1 + 1e-9):
        assert p.bound == "math"
    elif t < bd["eq4"] * (1 - 1e-9):
        assert p.bound == "memory"
    # eq. 12 (math-bound) / eq. 13 (memory-bound) <=> transfers hidden
    if p.t_math > p.t_mem * (1 + 1e-9) and g > 1:
        if t > bd["eq12"] * (1 + 1e-9):
            assert p.transfers_hidden
        elif t < bd["eq12"] * (1 - 1e-9):
            assert not p.transfers_hidden


def test_paper_task_time_grows_with_tile_once_bounds_are_met():
    # eqs. 14-15: beyond the bounds T_task increases with N_i
    n, g = 32768, 4
    bd = bounds(n, g, H200, "complex128")
    ts = [t for t in candidates(n, g) if t > max(bd["eq4"], bd["eq12"])]
    times = [predict(n, g, t, H200, "complex128", variant="paper").t_task for t in ts]
    assert len(times) >= 3 and all(a < b for a, b in zip(times, times[1:]))


def test_paper_best_tile_is_the_smallest_power_of_two_meeting_the_bounds():
    n, g = 32768, 4
    bd = bounds(n, g, H200, "complex128")
    need = max(bd["eq4"], min(bd["eq12"], bd["eq13"]))
    t = best_tile(n, g, H200, "complex128", variant="paper", min_tile=1)
    assert t > need and t / 2 <= need and t & (t - 1) == 0 and t <= n // g


def test_best_tile_stays_within_n_over_g():
    slow_link = Hardware(50e12, 4.8e12, 1e9)  # transfers never hidden
    for v in ("paper", "refined"):
        t = best_tile(16384, 4, slow_link, "complex128", variant=v)
        assert t <= 16384 // 4


def test_dtype_generalisation():
    assert dtype_factors("float32") == (4, 2, 1)
    assert dtype_factors("complex128") == (16, 8, 1)
    assert dtype_factors("complex128", "4m") == (8, 2, 4)
    # 3m is one fused pass: three float32 planes per band, three real multiply-adds
    assert dtype_factors("complex64", "3m") == (12, 6, 1)
    n, g, t = 8192, 2, 1024
    # native complex128 at a complex rate == float64 with b, f scaled: same eq. 12 as fp32
    assert bounds(n, g, H200, "complex128")["eq12"] == pytest.approx(bounds(n, g, H200, "float32")["eq12"])
    # 4m = four float64 passes; its rate counts the 8 N^3 complex flops
    p4 = predict(n, g, t, H200, "complex128", "4m")
    pd = predict(n, g, t, H200, "float64")
    assert p4.t_task == pytest.approx(4 * pd.t_task)
    assert p4.rate == pytest.approx(8 * n ** 3 / p4.t_task)
    # every term of the fused 3m pass is three float64 ones (without latency: it is paid
    # once per transfer of three planes)
    hw0 = Hardware(H200.bw_math, H200.bw_mem, H200.bw_transfer)
    p3 = predict(n, g, t, hw0, "complex128", "3m")
    assert p3.t_task == pytest.approx(3 * predict(n, g, t, hw0, "float64").t_task)
    assert p3.t_transfer == pytest.approx(3 * predict(n, g, t, hw0, "float64").t_transfer)


@pytest.mark.parametrize("kwargs", [dict(bw_math=0.0, bw_mem=1.0, bw_transfer=1.0),
                                    dict(bw_math=1.0, bw_mem=-1.0, bw_transfer=1.0),
                                    dict(bw_math=1.0, bw_mem=1.0, bw_transfer=float("nan")),
                                    dict(bw_math=float("inf"), bw_mem=1.0, bw_transfer=1.0),
                                    dict(bw_math=1.0, bw_mem=1.0, bw_transfer=1.0, latency=-1.0)])
def test_bad_hardware_rejected(kwargs):
    with pytest.raises(ValueError, match="must be"):
        Hardware(**kwargs)


@pytest.mark.parametrize("call", [lambda: predict(0, 4, 1, H200), lambda: predict(64, 0, 1, H200),
                                  lambda: predict(64, 2, 128, H200), lambda: predict(64, 2, 8, H200, "int8"),
                                  lambda: predict(64, 2, 8, H200, variant="x"),
                                  lambda: predict(64, 2, 8, H200, "complex128", "5m")])
def test_bad_arguments_rejected(call):
    with pytest.raises(ValueError):
        call()


def test_cli_json_and_errors():
    r = CliRunner().invoke(mgemm_cli, ["model", "--n", "32768", "--gpus", "4", "--bw-math", "50T",
                                       "--bw-mem", "4.8T", "--bw-transfer", "391G", "--dtype",
                                       "complex128", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["tile"] == best_tile(32768, 4, Hardware(50e12, 4.8e12, 391e9), "complex128")
    assert {c["tile"] for c in doc["candidates"]} == set(candidates(32768, 4))
    for bad in (["--bw-math", "fast"], ["--bw-math", "-5"], ["--gpus", "0"]):
        args = ["model", "--n", "1024", "--gpus", "2", "--bw-math", "1T", "--bw-mem", "1T",
                "--bw-transfer", "1G"]
        i = args.index(bad[0])
        args[i + 1] = bad[1]
        r = CliRunner().invoke(mgemm_cli, args)
        assert r.exit_code == 2 and bad[1] in r.output, r.output
        assert "Traceback" not in r.output


def test_auto_tile_uses_a_saved_profile(tmp_path, monkeypatch):
    prof = {"kind": "mgemm-profile", "bw_math": {"float64": 60e12, "complex128": 50e12},
            "bw_mem": 4.8e12, "bw_transfer": 40e9, "latency": 0.0}
    p = tmp_path / "profile.json"
    p.write_text(json.dumps(prof))
    monkeypatch.setenv("MGEMM_PROFILE", str(p))
    hw = Hardware(50e12, 4.8e12, 40e9)
    assert resolve_tile(None, 32768, 32768, 4, "complex128") == best_tile(32768, 4, hw, "complex128")
    assert resolve_tile(512, 32768, 32768, 4, "complex128") == 512
    p.write_text(json.dumps({"kind": "something else"}))  # not ours: the heuristic, no crash
    assert resolve_tile(None, 32768, 32768, 4, "complex128") >= 1
    assert model_report(1024, 2, hw)["tile"] in candidates(1024, 2)


def test_math_curve_interpolates_and_only_the_refined_variant_uses_it():
    curve = ((512, 20e12), (2048, 40e12), (8192, 50e12))
    hw = Hardware(50e12, 4.8e12, 391e9, math_curve=curve)
    assert hw.math_rate(256) == 20e12 and hw.math_rate(16384) == 50e12
    assert hw.math_rate(1024) == pytest.approx(30e12)  # halfway in log2
    n, g = 32768, 4
    assert predict(n, g, 1024, hw, "complex128").t_math == pytest.approx(8 * 1024 ** 2 * n / 30e12)
    assert predict(n, g, 1024, hw, "complex128", variant="paper").t_math == pytest.approx(
        8 * 1024 ** 2 * n / 50e12)
    # slow small tiles push the refined choice up
    assert best_tile(n, g, hw, "complex128") > best_tile(n, g, Hardware(50e12, 4.8e12, 391e9), "complex128")
    with pytest.raises(ValueError, match="math_curve"):
        Hardware(1.0, 1.0, 1.0, math_curve=((512, -1.0),))


@pytest.mark.parametrize("cmd", [["probe"], ["tune"], ["bench-expm"], ["bench", "--n", "64"]])
def test_gpu_commands_without_gpu_exit_2(cmd):
    from mgemm.arrays import gpu_count
    if gpu_count():
        pytest.skip("GPUs present")
    r = CliRunner().invoke(mgemm_cli, cmd)
    assert r.exit_code == 2 and "GPU" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("cmd, value", [
    (["bench", "--interleave", "sideways"], "sideways"),
    (["bench", "--plane-copies", "some"], "some"),
    (["bench", "--row-tile", "0"], "0"),
    (["bench", "--complex-method", "5m"], "5m"),
    (["plan", "--n", "64", "--complex-method", "4m"], "4m"),
    (["tune", "--complex-method", "4m"], "4m"),
    (["probe", "--tile-k", "0"], "0"),
])
def test_bad_engine_options_exit_2(cmd, value):
    """A wrong value of the new options names the option and the value, exit 2."""
    r = CliRunner().invoke(mgemm_cli, cmd)
    assert r.exit_code == 2 and value in r.output and "Traceback" not in r.output
    assert ("--" + cmd[-2].lstrip("-")) in r.output


def test_3m_auto_tile_uses_the_profiles_3m_curve(tmp_path, monkeypatch):
    """tile='auto' for 3m rates tiles by the profile's 3m curve (the batched plane GEMMs)
    where there is one, else by the real type's tile curve."""
    from mgemm.profile import hardware_from_profile
    fast = lambda best: {str(t): (60e12 if t == best else 40e12)  # noqa: E731
                         for t in (512, 1024, 2048, 4096, 8192)}
    prof = {"kind": "mgemm-profile",
            "bw_math": {"float32": 40e12, "float64": 60e12, "complex128": 50e12},
            "bw_mem": 4.8e12, "bw_transfer": 391e9, "latency": 0.0,
            "tile_rates": {"float64": fast(2048), "complex128": fast(1024)}}
    p = tmp_path / "profile.json"
    p.write_text(json.dumps(prof))
    monkeypatch.setenv("MGEMM_PROFILE", str(p))
    n = 32768
    assert resolve_tile(None, n, n, 4, "complex128", "3m") == 2048      # float64's curve
    assert resolve_tile(None, n, n, 4, "complex128") == 1024             # complex128's
    prof["tile_rates_3m"] = {"complex128": fast(4096)}
    p.write_text(json.dumps(prof))
    assert resolve_tile(None, n, n, 4, "complex128", "3m") == 4096      # the 3m curve
    assert resolve_tile(None, n, n, 4, "complex128") == 1024             # native unchanged
    hw = hardware_from_profile(prof, "complex128", "3m")
    assert hw.math_rate(4096) == 60e12 and hw.bw_math == 60e12
    assert hardware_from_profile(prof, "complex64", "3m").math_rate(4096) == 40e12  # no 3m curve


def test_tuned_tiles_come_before_the_model(tmp_path, monkeypatch):
    """`mgemm tune --save` entries: merged per (dtype, method, GPUs, N), newest wins;
    tile='auto' takes an exact match and falls back to the model otherwise."""
    from mgemm.profile import tuned_entries, tuned_tile
    prof = {"kind": "mgemm-profile", "bw_math": {"float64": 60e12, "complex128": 50e12},
            "bw_mem": 4.8e12, "bw_transfer": 391e9, "latency": 0.0}
    summary = [{"n": 32768, "gpus": 2, "dtype": "complex128", "complex_method": "3m",
                "placement": "three", "measured_best_tile": 4096, "measured_best_seconds": 2.0},
               {"n": 32768, "gpus": 2, "dtype": "complex128", "complex_method": "native",
                "placement": "three", "measured_best_tile": 1024, "measured_best_seconds": 2.5}]
    prof["tuned"] = tuned_entries(prof, summary)
    again = dict(summary[0], measured_best_tile=8192)
    prof["tuned"] = tuned_entries(prof, [again])
    assert len(prof["tuned"]) == 2
    assert tuned_tile(prof, "complex128", "3m", 2, 32768) == 8192
    assert tuned_tile(prof, "complex128", "3m", 4, 32768) is None
    assert tuned_tile(prof, "complex128", "3m", 2, 32768, "one") is None   # not tuned there
    p = tmp_path / "profile.json"
    p.write_text(json.dumps(prof))
    monkeypatch.setenv("MGEMM_PROFILE", str(p))
    assert resolve_tile(None, 32768, 32768, 2, "complex128", "3m") == 8192
    assert resolve_tile("auto", 32768, 32768, 2, "complex128") == 1024
    hw = hardware_from_profile(prof, "complex128", "3m")
    assert resolve_tile(None, 32768, 32768, 4, "complex128", "3m") == best_tile(
        32768, 4, hw, "complex128", "3m")                      # not tuned: the model
    assert resolve_tile(2048, 32768, 32768, 2, "complex128", "3m") == 2048
    assert resolve_tile(None, 32768, 32768, 2, "complex128", "3m", "one") == best_tile(
        32768, 2, hw, "complex128", "3m")
