"""The full propagator U(t) (operator mode), transition probabilities and Floquet analysis.

References are independent: unitarity (P doubly stochastic when K = N), the state
propagator (U(t) psi0 against the psi(t) propagated on its own) and, for a static
potential, the exact eigenvalues E_n of the same discrete H (U(T) = exp(-i H T), so its
phases are E_n T mod 2 pi).  Tolerances: per-step tolerance 1e-14 => after M <= 400 steps
errors of a few 1e-12 at most; phases compared to 1e-9.
"""
import math

import numpy as np
import pytest
from click.testing import CliRunner

from tdse import config as cfgmod
from tdse.ui.cli import main
from tdse.studies.floquet import analyse, floquet_config
from tdse.model.states import eigenstates
from tdse.numerics.precheck import precheck
from tdse.numerics.stepper import Stepper as Propagator
from tdse.run.driver import run
from tdse.run.snapshots import read

BASE = """
name = "op"
[grid]
x_min = -6.4
x_max = 6.4
dx = 0.2
[potential]
a = 0.5
[[potential.centres]]
x0 = -1.0
Z = 2.0
amplitude = {amp}
frequency = 3.0
[[potential.centres]]
x0 = 1.0
Z = 2.0
amplitude = {amp}
frequency = 3.0
[time]
dt = {dt}
t_end = {t_end}
[propagator]
method = "auto"
tolerance = 1e-14
operator = true
[output]
every = 10
populations = {k}
"""


def cfg(amp=0.3, dt=0.005, t_end=0.2, k=64):
    return cfgmod.loads(BASE.format(amp=amp, dt=dt, t_end=t_end, k=k))


def test_transition_matrix_is_doubly_stochastic_when_k_is_n(tmp_path):
    c = cfg(k=64)
    assert c.grid.n == 64
    d = read(run(c, tmp_path, backend="numpy").path)
    P = d["operator/P"]
    assert P.shape == (5, 64, 64)
    assert np.allclose(P[0], np.eye(64), atol=1e-13)
    assert np.abs(P.sum(axis=1) - 1).max() < 1e-11
    assert np.abs(P.sum(axis=2) - 1).max() < 1e-11
    # column 0 is the ground state's populations, stored independently
    at_snapshots = np.isin(d["observables/step"], d["snapshots/step"])
    assert np.allclose(P[:, :, 0], d["observables/populations_h0"][at_snapshots], atol=1e-12)
    assert not np.allclose(P[-1], np.eye(64), atol=1e-6)  # the driving did something


@pytest.mark.parametrize("opts", [{}, {"devices": 3, "layout": "bands", "output": "banded"}])
def test_operator_applied_to_psi0_equals_propagated_state(opts, rng):
    c = cfg()
    pc = precheck(c)
    prop = Propagator(c, pc.plan, gemm_opts=opts)
    psi0 = rng.standard_normal(c.grid.n) + 1j * rng.standard_normal(c.grid.n)
    psi, Ut = psi0.copy(), np.eye(c.grid.n, dtype=complex)
    for j in range(30):
        psi = prop.step(psi, j)
        Ut = prop.step_operator(Ut, j)
    Ut = Ut.to_array() if hasattr(Ut, "to_array") else Ut
    assert np.abs(Ut @ psi0 - psi).max() < 1e-12 * np.abs(psi).max()


def test_floquet_of_static_potential_gives_energies_times_period():
    c = cfg(amp=0.0, t_end=1.0)
    T, M = 1.7, 340  # any period for a static potential
    res = analyse(c, period=T, steps=M, count=6, backend="numpy")
    E, _ = eigenstates(c, 0.0, 6)
    for s in res["states"]:
        assert s["overlap"] > 1 - 1e-9
        d = (s["phase"] - (E[s["n"]] * T) % (2 * math.pi) + math.pi) % (2 * math.pi) - math.pi
        assert abs(d) < 1e-9, (s, E[s["n"]] * T)
    assert res["unitarity"] < 1e-11


def test_floquet_steps_nearest_to_dt_and_says_so():
    c = cfg(dt=0.005)
    c1, T, M, note = floquet_config(c)  # 2 pi / 3 / 0.005 = 418.88 steps
    assert M == 419 and c1.time.dt == T / 419 and c1.time.t_end == M * c1.time.dt
    assert "418.879" in note and "M = 419" in note and "0.005" in note  # never silent
    c2, T, M, note = floquet_config(c, steps=400)
    assert T == pytest.approx(2 * math.pi / 3) and M == 400 and c2.time.dt == T / 400 and not note
    dt3 = 2 * math.pi / 3 / 400
    c3, _, M3, note3 = floquet_config(cfg(dt=dt3, t_end=40 * dt3))
    assert M3 == 400 and not note3  # a dt that divides T is kept as given
    with pytest.raises(cfgmod.ConfigError, match="--period"):
        floquet_config(cfg(amp=0.0))


def test_floquet_cli(tmp_path, inputs_dir):
    p = tmp_path / "in.toml"
    p.write_text(BASE.format(amp=0.3, dt=0.005, t_end=0.2, k=4))
    r = CliRunner().invoke(main, ["floquet", str(p), "--out", str(tmp_path), "--steps", "200",
                                  "--backend", "numpy", "--count", "3"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "op_floquet.json").exists() and (tmp_path / "op_floquet.png").exists()
    r = CliRunner().invoke(main, ["floquet", str(p), "--out", str(tmp_path), "--backend", "numpy"])
    assert r.exit_code == 2 and "exists" in r.output  # never overwritten without --force
    r = CliRunner().invoke(main, ["floquet", str(p), "--out", str(tmp_path / "x"), "--backend", "numpy",
                                  "--count", "3"])
    assert r.exit_code == 0 and "M = 419 steps" in r.output and "note:" in r.output


def test_operator_key_is_validated():
    with pytest.raises(cfgmod.ConfigError, match="propagator.operator"):
        cfgmod.loads(BASE.format(amp=0.3, dt=0.005, t_end=0.2, k=4).replace(
            "operator = true", 'operator = "yes"'))
    # operator mode needs more dense matrices: the memory check counts them (auto: its
    # least-needing candidate, Chebyshev -- 6 matrices for U(t) and its recurrence, none for psi)
    from tdse.numerics.precheck import memory_check, precheck
    text = BASE.format(amp=0.3, dt=0.005, t_end=0.2, k=4)
    op, psi = cfgmod.loads(text), cfgmod.loads(text.replace("operator = true", "operator = false"))
    need_op, need = memory_check(op, 2**40), memory_check(psi, 2**40)
    assert need_op - need == 6 * 16 * 64 ** 2
    with pytest.raises(cfgmod.ConfigError, match="largest N"):
        precheck(op, memory_limit=(need + need_op) // 2)
    precheck(psi, memory_limit=(need + need_op) // 2)


@pytest.mark.parametrize("args, key", [(["--period", "-1"], "--period"), (["--period", "nan"], "--period"),
                                       (["--steps", "0"], "--steps")])
def test_floquet_bad_options(tmp_path, args, key):
    p = tmp_path / "in.toml"
    p.write_text(BASE.format(amp=0.3, dt=0.005, t_end=0.2, k=4))
    r = CliRunner().invoke(main, ["floquet", str(p), "--out", str(tmp_path), "--backend", "numpy", *args])
    assert r.exit_code == 2 and key in r.output and "Traceback" not in r.output, r.output


def test_floquet_scan_of_static_potential_follows_the_energies():
    """Scanning potential.a with the centres at rest: every point's Floquet states are the
    eigenstates of that H, quasi-energies E_n folded into [-omega/2, omega/2)."""
    from tdse.studies.floquet import fold, scan
    c = cfg(amp=0.0, t_end=1.0)
    T, M = 1.3, 260
    res = scan(c, "potential.a", [0.3, 0.5, 0.9], period=T, steps=M, count=3, backend="numpy")
    assert [p["value"] for p in res["points"]] == [0.3, 0.5, 0.9]
    w = 2 * math.pi / T
    for p in res["points"]:
        assert p["omega"] == pytest.approx(w) and p["steps"] == M
        assert all(-w / 2 - 1e-12 <= e < w / 2 + 1e-12 for e in p["quasi_energies"])
        E, _ = eigenstates(cfgmod.with_value(c, "potential.a", p["value"]), 0.0, 3)
        for s in p["states"]:
            assert s["overlap"] > 1 - 1e-9 and s["E_n"] == pytest.approx(E[s["n"]], abs=1e-12)
            d = (s["quasi_energy"] - fold(E[s["n"]], T) + w / 2) % w - w / 2
            assert abs(d) < 1e-9 / T
    # the energies move with a: the scan is not one point repeated
    e0 = [p["states"][0]["E_n"] for p in res["points"]]
    assert e0[0] < e0[1] < e0[2]


def test_floquet_scan_cli(tmp_path):
    p = tmp_path / "in.toml"
    p.write_text(BASE.format(amp=0.3, dt=0.005, t_end=0.2, k=4))
    args = ["floquet", str(p), "--out", str(tmp_path), "--steps", "60", "--backend", "numpy",
            "--count", "2"]
    r = CliRunner().invoke(main, args + ["--scan", "potential.centres.frequency=2:4:3"])
    assert r.exit_code == 0, r.output
    doc = __import__("json").loads((tmp_path / "op_floquet_scan.json").read_text())
    assert [q["value"] for q in doc["points"]] == [2.0, 3.0, 4.0]
    assert [q["period"] for q in doc["points"]] == pytest.approx([math.pi, 2 * math.pi / 3, math.pi / 2])
    assert all(q["unitarity"] < 1e-11 and len(q["states"]) == 2 for q in doc["points"])
    assert (tmp_path / "op_floquet_scan.png").stat().st_size > 1000
    assert "atomic units" in r.output and "potential.centres.frequency" in r.output
    before = (tmp_path / "op_floquet_scan.json").read_bytes()
    again = CliRunner().invoke(main, args + ["--scan", "potential.centres.frequency=2:4:3"])
    assert again.exit_code == 2 and "--force" in again.output
    assert (tmp_path / "op_floquet_scan.json").read_bytes() == before
    for bad, said in [("frequency=2:4", "KEY=a:b:n"), ("potential.a=1:2:1", "KEY=a:b:n"),
                      ("potential.a=x:2:3", "KEY=a:b:n"), ("nosuch.key=1:2:3", "nosuch.key"),
                      ("potential.centres.frequency=-1:1:3", "frequency")]:
        r = CliRunner().invoke(main, args + ["--scan", bad, "--force"])
        assert r.exit_code == 2, (bad, r.output)
        assert said in r.output and "Traceback" not in r.output and len(r.output.strip().splitlines()) <= 2


@pytest.mark.parametrize("key,values,steps", [
    ("potential.a", [0.3, 0.6, 0.9], 120),                       # one batch, shared M
    ("potential.centres.frequency", [2.0, 3.0], None),           # M from each T: two batches
])
def test_floquet_scan_batched_equals_point_by_point(key, values, steps):
    """tdse floquet --scan through the scans' batch machinery (every point's identity
    columns in one block, block Chebyshev) against one analyse per point with the input's
    dense exponent (#26): quasi-energies, shifts and overlaps of the lowest states to 1e-9
    (each exponential errs by at most 1e-12), and the batch really held several points."""
    from tdse.studies import floquet
    c = cfg(amp=0.3, t_end=1.0)
    kw = dict(period=None if key.endswith("frequency") else 1.1, steps=steps, count=3, backend="numpy")
    serial = floquet.scan(c, key, values, batched=False, **kw)
    batched = floquet.scan(c, key, values, **kw)
    assert batched["batched"] and not serial["batched"]
    for p, q in zip(serial["points"], batched["points"]):
        assert p["value"] == q["value"] and p["steps"] == q["steps"]
        assert q["unitarity"] < 1e-11
        for s, t in zip(p["states"], q["states"]):
            assert abs(s["quasi_energy"] - t["quasi_energy"]) < 1e-9
            assert abs(s["shift"] - t["shift"]) < 1e-9 and abs(s["overlap"] - t["overlap"]) < 1e-9
    cfgs = [floquet.floquet_config(cfgmod.with_value(c, key, v), kw["period"], steps) for v in values]
    groups = floquet._floquet_batches([p[0] for p in cfgs], [p[2] for p in cfgs], 2 ** 30)
    assert len(groups) == (1 if steps else 2)


@pytest.mark.parametrize("c2, tied", [(0.54, True), (0.7, True), (0.9, False)])
def test_floquet_ties_a_two_level_mixing_of_known_weight(c2, tied):
    """#58 item 7: U(T) made from H(0)'s eigenvectors with states 0 and 1 rotated into each
    other (cos^2 = c2: each Floquet state holds c2 of one and 1 - c2 of the other).  A
    near 50/50 mixing (0.54 / 0.46: the states' largest overlaps are with different Floquet
    states) and a 0.7 / 0.3 one are reported as ties; a 0.9 / 0.1 one is not (below
    MIX_OVERLAP); no other state is tied."""
    from tdse.studies import floquet
    c = cfg(amp=0.0, t_end=1.0)
    n = c.grid.n
    E, phi = eigenstates(c, 0.0, n)
    F = (phi * math.sqrt(c.grid.dx)).T.astype(complex)            # columns: orthonormal
    th = math.acos(math.sqrt(c2))
    R = np.array([[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]])
    F[:, :2] = F[:, :2] @ R
    phases = np.linspace(0.1, 6.0, n)                               # distinct: eig is unique
    U = F @ np.diag(np.exp(-1j * phases)) @ F.conj().T
    res = floquet._analysis(c, 1.0, 10, "", U, {}, None, 6)
    assert res["ties"] == ([[0, 1]] if tied else [])
    assert res["states"][0]["shared_with"] == ([1] if tied else [])
    assert all(s["shared_with"] == [] for s in res["states"][2:])
    got = sorted(s["overlap"] for s in res["states"][:2])
    assert np.allclose(got, max(c2, 1 - c2), atol=1e-10)


@pytest.mark.parametrize("shape", [(97,), (256,), (64, 5)])
def test_the_dvr_kinetic_on_the_host_is_scipy_ffts_bits_whichever_binding(shape, monkeypatch):
    """tdse.model.ffts.padded_kinetic -- SciPy's pocketfft binding called in place where its
    first-use check vouches for it -- gives the bits of ifft(lam fft(pad))[:n] by scipy.fft, and
    so does its fallback (the check failing), for a vector and a block; and it is the DVR's T
    (against the dense sinc-DVR matrix to 1e-12 of its norm)."""
    import scipy.fft

    from tdse.model import ffts
    from tdse.model.hamiltonian import dvr_symbol
    rng = np.random.default_rng(sum(shape))
    n, dx = shape[0], 0.1
    X = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    scale = rng.uniform(0.5, 2.0)
    lam = dvr_symbol(n, dx, np) * scale
    lam = lam if len(shape) == 1 else lam[:, None]
    pad = np.zeros((2 * n,) + shape[1:], dtype=np.complex128)
    pad[:n] = X
    want = scipy.fft.ifft(lam * scipy.fft.fft(pad, axis=0, workers=-1), axis=0, workers=-1)[:n]
    got = ffts.padded_kinetic(X, lam, n)
    assert got.shape == X.shape and np.array_equal(got, want)
    monkeypatch.setattr(ffts, "_POCKET", [None])                # the fallback
    assert np.array_equal(ffts.padded_kinetic(X, lam, n), want)
    # the operator it is: T_ij = (hbar^2 / 2 m dx^2) (pi^2/3 on the diagonal, 2 (-1)^(i-j) / (i-j)^2 off it)
    i = np.arange(n)
    d = i[:, None] - i[None, :]
    with np.errstate(divide="ignore"):
        T = np.where(d == 0, np.pi ** 2 / 3.0, 2.0 * (-1.0) ** d / np.where(d == 0, 1, d) ** 2) / (2 * dx * dx)
    ref = scale * (T @ X)
    assert np.abs(got - ref).max() <= 1e-12 * np.abs(scale * T).sum(axis=1).max() * np.abs(X).max()


def test_the_pocketfft_check_refuses_a_binding_that_gives_other_bits(monkeypatch):
    """ffts._pocket: a binding whose transforms differ from scipy.fft's is not used.  (Where
    this SciPy has no such binding, or one of another signature -- SciPy 1.18.1 on the GPU
    machine, 2026-12-02 -- ffts falls back to scipy.fft and there is nothing to refuse.)"""
    pp = pytest.importorskip("scipy.fft._pocketfft.pypocketfft")

    from tdse.model import ffts
    real = pp.c2c
    monkeypatch.setattr(ffts, "_POCKET", [])
    if ffts._pocket() is None:
        pytest.skip("this SciPy's c2c is not the one ffts calls: scipy.fft is used")

    def off(a, axes, forward, inorm, out, nthreads):      # (off where called in place,
        r = real(a, axes, forward, inorm, out, nthreads)    # as ffts calls it: scipy.fft's
        if out is not None:                                 # own calls unchanged)
            r[0] += 1e-15 * (1 + abs(r[0]))
        return r
    monkeypatch.setattr(pp, "c2c", off)
    monkeypatch.setattr(ffts, "_POCKET", [])
    assert ffts._pocket() is None
    monkeypatch.setattr(pp, "c2c", real)
    monkeypatch.setattr(ffts, "_POCKET", [])
    assert ffts._pocket() is real


@pytest.mark.parametrize("shape", [(1002,), (66, 3)])
def test_the_in_place_transforms_are_scipy_ffts_bits(shape, monkeypatch):
    """tdse.model.ffts.fft_axis0 (the error carrier's sine steps): scipy.fft's fft and
    ifft along axis 0, the same bits, by the binding in place and by its fallback."""
    import scipy.fft

    from tdse.model import ffts
    rng = np.random.default_rng(len(shape))
    y = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    for binding in (ffts._pocket(), None):
        monkeypatch.setattr(ffts, "_POCKET", [binding])
        for forward, ref in ((True, scipy.fft.fft), (False, scipy.fft.ifft)):
            got = ffts.fft_axis0(y.copy(), forward)
            assert np.array_equal(got, ref(y, axis=0)), (binding, forward)
