"""Shipped tile tables and complex_method="auto" (mgemm.profile): the lookup order (a
user's tuned tile, the table measured on this GPU model, the model, the heuristic), the
nearest-N rule, 3m chosen only where measured faster, and the shipped file's provenance."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import mgemm
from mgemm import profile
from mgemm.executors.common import resolve_tile
from mgemm.schedule import auto_tile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TABLE = [{"gpu": "H999", "sources": ["x.json"], "tuned": [
    {"dtype": "complex128", "complex_method": "native", "gpus": 4, "n": 16384, "tile": 1024,
     "placement": "three", "seconds": 0.17},
    {"dtype": "complex128", "complex_method": "3m", "gpus": 4, "n": 16384, "tile": 2048,
     "placement": "three", "seconds": 0.14},
    {"dtype": "complex128", "complex_method": "native", "gpus": 2, "n": 32768, "tile": 1024,
     "placement": "one", "seconds": 2.6},
    {"dtype": "complex128", "complex_method": "3m", "gpus": 2, "n": 32768, "tile": 8192,
     "placement": "one", "seconds": 2.9}]}]


@pytest.fixture
def table(monkeypatch, tmp_path):
    monkeypatch.setattr(profile, "_SHIPPED", TABLE)
    monkeypatch.setenv("MGEMM_PROFILE", str(tmp_path / "none.json"))  # no user profile


def test_shipped_tile_nearest_n_within_a_factor_two(table):
    assert profile.shipped_tile("NVIDIA H999 SXM", "complex128", "3m", 4, 16384) == 2048
    assert profile.shipped_tile("NVIDIA H999", "complex128", "3m", 4, 24000) == 2048
    assert profile.shipped_tile("NVIDIA H999", "complex128", "3m", 4, 65536) is None  # 4x away
    assert profile.shipped_tile("NVIDIA H999", "complex128", "3m", 2, 16384) is None  # other G
    assert profile.shipped_tile("NVIDIA A100", "complex128", "3m", 4, 16384) is None  # other model
    assert profile.shipped_tile(None, "complex128", "3m", 4, 16384) is None


def test_lookup_order_user_then_shipped_then_heuristic(table, tmp_path, monkeypatch):
    args = (16384, 16384, 4, np.dtype(np.complex128), "3m", "three")
    assert resolve_tile("auto", *args, gpu_name="NVIDIA H999") == 2048
    assert resolve_tile("auto", *args, gpu_name="NVIDIA A100") == auto_tile(16384, 16384, 4)
    assert resolve_tile(512, *args, gpu_name="NVIDIA H999") == 512  # an explicit tile wins
    user = {"kind": "mgemm-profile", "bw_math": {"complex128": 5e13, "float64": 5e13}, "bw_mem": 4e12,
            "bw_transfer": 3.9e11, "tuned": [
                {"dtype": "complex128", "complex_method": "3m", "gpus": 4, "n": 16384, "tile": 4096,
                 "placement": "three", "seconds": 0.13}]}
    p = tmp_path / "prof.json"
    p.write_text(json.dumps(user))
    monkeypatch.setenv("MGEMM_PROFILE", str(p))
    assert resolve_tile("auto", *args, gpu_name="NVIDIA H999") == 4096  # the user's tune --save
    assert profile.choose_method("NVIDIA H999", "complex128", 4, 16384, "three", user) == "3m"


def test_choose_method_takes_3m_only_where_measured_faster(table):
    assert profile.choose_method("NVIDIA H999", "complex128", 4, 16384, "three") == "3m"
    assert profile.choose_method("NVIDIA H999", "complex128", 2, 32768, "one") == "native"
    assert profile.choose_method("NVIDIA H999", "complex128", 3, 16384, "three") == "native"  # no data
    assert profile.choose_method("NVIDIA H999", "float64", 4, 16384, "three") == "native"
    assert profile.choose_method("NVIDIA A100", "complex128", 4, 16384, "three") == "native"


@pytest.mark.parametrize("executor", ["numpy", "emulated"])
def test_auto_complex_method_without_gpu_is_native(rng, executor):
    A = rng.standard_normal((40, 30)) + 1j * rng.standard_normal((40, 30))
    B = rng.standard_normal((30, 20)) + 1j * rng.standard_normal((30, 20))
    kw = {"devices": 2} if executor == "emulated" else {}
    C = mgemm.gemm(A, B, complex_method="auto", executor=executor, **kw)
    assert np.abs(C - A @ B).max() < 1e-12 * np.abs(A @ B).max()


def test_the_shipped_file_names_its_measurements():
    profile._SHIPPED = None  # the real file
    tables = profile.shipped_tables()
    assert tables and {"H200"} <= {t["gpu"] for t in tables}
    results = os.listdir(os.path.join(ROOT, "benchmarks", "results"))
    for t in tables:
        assert t["sources"] and all(s in results for s in t["sources"])
        for e in t["tuned"]:
            assert e["source"] in results and e["tile"] >= 256 and e["seconds"] > 0
            assert e["complex_method"] in ("native", "3m") and e["placement"] in ("one", "three")
