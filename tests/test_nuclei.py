"""The 1D + 1D H2+ model with quantum nuclei (#57, tdse.model.nuclei), each against an
independent reference: the step against SciPy's expm_multiply on the whole Kronecker-sum H;
a separable V against products of 1D propagations by eigendecomposition; the 2D
eigenstates against a dense eigensolver; the Born-Oppenheimer curve against the project's
1D solver at fixed R; vibrational levels against the BO curve's (the non-adiabatic shift
small, positive and ~1/M); heavy nuclei approaching fixed nuclei; conservation; the
fractions and absorbed norm adding to 1; the KER of a packet of known momentum; the CLI."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse.linalg as sla
from click.testing import CliRunner

from tdse.config import ConfigError, loads
from tdse.model import nuclei as nm
from tdse.model import states
from tdse.numerics.stepper import NucleiStepper

SMALL = """
name = "nuc"
[grid]
x_min = -{xm}
x_max = {xm}
dx = {dx}
stencil = {st}
[potential]
a = 1.0
[nuclei]
R_min = {rmin}
R_max = {rmax}
dR = {dR}
mass = {M}
{extra}
[time]
dt = {dt}
t_end = {t_end}
[propagator]
method = "chebyshev"
scheme = "{scheme}"
tolerance = 1e-12
"""


def small(xm=12.0, dx=0.5, st='"dvr"', rmin=0.4, rmax=6.4, dR=0.2, M=1836.15267343, extra="",
          dt=0.05, t_end=1.0, scheme="midpoint", field=None):
    text = SMALL.format(**locals())
    if field:
        text += "[field]\n" + "\n".join(f"{k} = {v!r}" for k, v in field.items()) + "\n"
    return loads(text)


def fixed_nuclei(R):
    """The 1D molecule with centres at +-R/2 (electron mass 1) on the small() x grid (3-point)."""
    return loads(f"""name = "fixed"
[grid]
x_min = -12.0
x_max = 12.0
dx = 0.2
[potential]
a = 1.0
[[potential.centres]]
x0 = {R / 2!r}
Z = 1.0
[[potential.centres]]
x0 = {-R / 2!r}
Z = 1.0
[time]
dt = 0.1
t_end = 1.0
""")


def kron_H(m):
    nx, nr = m.shape
    return (np.kron(m.Tx_host, np.eye(nr)) + np.kron(np.eye(nx), m.TR_host) + np.diag(m.V_host.ravel()))


def random_psi(m, seed):
    rng = np.random.default_rng(seed)
    psi = (rng.standard_normal(m.shape) + 1j * rng.standard_normal(m.shape))
    psi *= np.exp(-m.x[:, None] ** 2 / 30 - (m.R[None, :] - 2.6) ** 2)
    return psi / math.sqrt((abs(psi) ** 2).sum() * m.dA)


@pytest.mark.parametrize("scheme,stencil", [("midpoint", '"dvr"'), ("cfm4", "5"), ("cfm4", "3")])
def test_steps_against_expm_multiply_of_the_whole_H(scheme, stencil):
    """Ten steps in a field, each factor exp(-i dt G_k) against SciPy's expm_multiply of
    G_k = sum_j w_kj H(t_j) built as the N_x N_R dense Kronecker sum (Chebyshev at 1e-12:
    the difference is rounding, ~1e-13)."""
    rng = np.random.default_rng()
    E0, omega = rng.uniform(0.02, 0.08), rng.uniform(0.1, 0.4)
    cfg = small(st=stencil, scheme=scheme, field={"E0": E0, "omega": omega, "duration": 10.0})
    m = nm.Model(cfg)
    st = NucleiStepper(m)
    psi = random_psi(m, int(rng.integers(1 << 30)))
    H0, X = kron_H(m), np.kron(m.kappa * m.x, np.ones(m.shape[1]))
    ref, Y = psi.ravel().copy(), psi
    dt = cfg.time.dt
    for j in range(10):
        Y = st.step(Y, j)
        times = st.scheme.times(j * dt, dt)
        for row in st.scheme.factors:
            G = sum(w for w in row) * H0 + np.diag(sum(w * m.field(t) for w, t in zip(row, times)) * X)
            ref = sla.expm_multiply(-1j * dt * G, ref)
    assert np.abs(Y.ravel() - ref).max() < 1e-10


def test_a_separable_potential_propagates_as_the_product_of_1d_solutions():
    """V(x, R) = f(x) + g(R): psi(0) = phi(x) chi(R) stays the product of the two 1D
    propagations, each by its own eigendecomposition (H_x = T_x + f, H_R = T_R + g)."""
    m = nm.Model(small(dt=0.1))
    f = -1.0 / np.sqrt(m.x ** 2 + 1.0)
    g = 0.05 * (m.R - 2.5) ** 2
    m.V_host = f[:, None] + g[None, :]
    m.V, m.v_range = m.V_host, (float(m.V_host.min()), float(m.V_host.max()))
    rng = np.random.default_rng()
    phi = np.exp(-(m.x - rng.uniform(-1, 1)) ** 2 / 4 + 1j * rng.uniform(-1, 1) * m.x)
    chi = np.exp(-(m.R - rng.uniform(2, 3)) ** 2 + 3j * m.R)
    Y = phi[:, None] * chi[None, :]
    st = NucleiStepper(m)
    for j in range(20):
        Y = st.step(Y, j)
    t = 20 * 0.1
    wx, vx = np.linalg.eigh(m.Tx_host + np.diag(f))
    wr, vr = np.linalg.eigh(m.TR_host + np.diag(g))
    px = vx @ (np.exp(-1j * t * wx) * (vx.T @ phi))
    pr = vr @ (np.exp(-1j * t * wr) * (vr.T @ chi))
    ref = px[:, None] * pr[None, :]
    assert np.abs(Y - ref).max() < 1e-10 * np.abs(ref).max()


def test_eigenstates_against_a_dense_eigensolver():
    m = nm.Model(small(dx=0.6, dR=0.25))
    w, v = nm.eigenstates(m, 4)
    wd, vd = scipy.linalg.eigh(kron_H(m), subset_by_index=[0, 3])
    assert np.abs(w - wd).max() < 1e-10
    for k in range(4):         # the same states, up to sign
        a = vd[:, k] / math.sqrt(m.dA)
        assert abs(abs(np.dot(v[:, :, k].ravel(), a)) * m.dA - 1) < 1e-8


def test_the_born_oppenheimer_curve_against_the_1d_solver_at_fixed_R():
    """E_0(R) of the model's electron (mass 1 here) against the project's own 1D eigensolver
    for the molecule with two centres at +-R/2 (tdse.model.states), plus 1/R."""
    m = nm.Model(small(st="3", dx=0.2, rmax=8.4))
    E, _ = nm.born_oppenheimer(m, 2, electron_mass=1.0)
    for j in np.random.default_rng().choice(m.shape[1], 5, replace=False):
        R = float(m.R[j])
        one = fixed_nuclei(R)
        w, _ = states.eigenstates(one, 0.0, 2)
        assert np.abs(E[j] - (w + 1.0 / R)).max() < 1e-9


def test_vibrational_levels_lie_just_above_the_born_oppenheimer_levels():
    """The model's levels against the nuclei's levels on the BO curve: above them (the BO
    ground state is a lower bound; the adiabatic correction is positive), by less than
    1e-4 hartree, and the shift falls as 1/M (x4 the mass: 1/4 the shift, within 20 %)."""
    shifts = []
    for M in (1836.15267343, 4 * 1836.15267343):
        m = nm.Model(small(M=M, dR=0.1 if M > 2000 else 0.2))
        E, _ = nm.born_oppenheimer(m, 1)
        levels, _ = nm.vibrational(m, E[:, 0], 3)
        w, _ = nm.eigenstates(m, 3)
        d = w - levels
        assert (d > 0).all() and (d < 1e-4).all(), d
        shifts.append(d[0])
    assert 3.2 < shifts[0] / shifts[1] < 4.8, shifts


def test_heavy_nuclei_approach_fixed_nuclei():
    """As M grows the model's ground state approaches the fixed-nuclei electron at <R>:
    the electron's <x^2> against the 1D molecule's at R = <R> (the project's 1D solver,
    electron mass 1), the difference falling with M (the nuclei's spread ~ M^(-1/4))."""
    diffs = []
    for M, dR in ((1e4, 0.04), (1e6, 0.01)):
        m = nm.Model(small(st="3", dx=0.2, rmin=2.0, rmax=3.2, dR=dR, M=M, xm=12.0))
        _, v = nm.eigenstates(m, 1)
        rho = v[:, :, 0] ** 2
        R = float((rho * m.R[None, :]).sum() * m.dA)
        x2 = float((rho * m.x[:, None] ** 2).sum() * m.dA)
        one = fixed_nuclei(R)
        _, phi = states.eigenstates(one, 0.0, 1)
        p = phi[0] ** 2 / (phi[0] ** 2).sum()
        diffs.append(abs(x2 - float((p * m.x ** 2).sum())))
    assert diffs[1] < diffs[0] / 5 and diffs[1] < 2e-3, diffs


def test_norm_and_energy_are_conserved_without_a_field():
    m = nm.Model(small(extra='state = "franck_condon"', dt=0.1))
    psi = nm.initial_state(m)
    st = NucleiStepper(m)
    a = m.measure(psi, 0.0)
    for j in range(40):
        psi = st.step(psi, j)
    b = m.measure(psi, 4.0)
    assert abs(b["norm"] - 1) < 1e-11
    assert abs(b["energy"] - a["energy"]) < 1e-9
    assert abs(b["R_mean"] - a["R_mean"]) > 1e-3     # the packet moves: a real test of the step


def test_fractions_and_absorbed_norm_add_to_one():
    """In a strong field with both absorbers the regions' fractions plus the norm the masks
    took equal 1 (the masks' loss counted exactly; the exponentials unitary to 1e-12)."""
    cfg = small(xm=20.0, rmax=12.4, dR=0.2, dt=0.1, scheme="cfm4",
                extra='state = "franck_condon"\nabsorber_width = 3.0\ndissociated_R = 4.0\nbound_radius = 3.0\n[absorber]\nwidth = 6.0',
                field={"E0": 0.12, "omega": 0.3, "duration": 15.0})
    m = nm.Model(cfg)
    psi, st = nm.initial_state(m), NucleiStepper(m)
    for j in range(150):
        psi = st.step(psi, j)
    r = m.measure(psi, 15.0, [float(a) for a in st.absorbed])
    assert r["absorbed_x"] > 1e-7                              # the test sees absorption
    total = r["bound"] + r["dissociated"] + r["ionised"] + r["absorbed_x"] + r["absorbed_R"]
    assert abs(total - 1) < 1e-9
    assert abs(r["norm"] + r["absorbed_x"] + r["absorbed_R"] - 1) < 1e-9


def test_ker_of_a_packet_of_known_momentum():
    """A packet phi_0(x; R) g(R) at large R with |g|^2 Gaussian of width s and momentum k0:
    its mean KER is (k0^2 + 1/(4 s^2)) / (2 mu_N) and its total the packet's norm in the
    dissociated region (Parseval)."""
    m = nm.Model(small(xm=20.0, rmax=24.4, dR=0.05, extra="dissociated_R = 8.0"))
    _, phi = nm.born_oppenheimer(m, 1)
    rng = np.random.default_rng()
    k0, s = rng.uniform(5, 9), rng.uniform(0.8, 1.2)
    g = np.exp(-(m.R - 16) ** 2 / (4 * s * s) + 1j * k0 * m.R)
    psi = phi[:, :, 0] * g[None, :]
    psi /= math.sqrt((abs(psi) ** 2).sum() * m.dA)
    ker = nm.ker_spectrum(m, psi)
    E, P = ker["energy"], ker["probability"]
    mean = float((E * P).sum() / P.sum())
    inside = m.measure(psi, 0.0)["dissociated"]
    assert inside > 0.999 and abs(ker["total"] + ker["incoming"] - inside) < 1e-9 and ker["incoming"] < 1e-4
    assert abs(mean - (k0 ** 2 + 1 / (4 * s * s)) / (2 * m.mu_N)) < 0.01 * mean


def test_bad_nuclei_input_is_one_line():
    for extra, key in (("repulsion_a = -1.0", "nuclei.repulsion_a"), ('state = "gaussian"', "nuclei.state"),
                       ("dR = 0.35", "nuclei.R_max"), ("shape = 1", "nuclei.shape")):
        text = SMALL.format(xm=12.0, dx=0.5, st='"dvr"', rmin=0.4, rmax=6.4, dR=0.2, M=1836.0,
                            extra=extra, dt=0.05, t_end=1.0, scheme="midpoint")
        text = text.replace("dR = 0.2\n", "") if extra.startswith("dR") else text
        with pytest.raises(ConfigError) as e:
            loads(text)
        assert key in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="potential.centres"):
        loads(SMALL.format(xm=12.0, dx=0.5, st='"dvr"', rmin=0.4, rmax=6.4, dR=0.2, M=1836.0, extra="",
                           dt=0.05, t_end=1.0, scheme="midpoint") + "[[potential.centres]]\nx0 = 0.0\nZ = 1.0\n")
    with pytest.raises(ConfigError, match="nuclei.R_min"):
        loads(SMALL.format(xm=12.0, dx=0.5, st='"dvr"', rmin=0.0, rmax=6.4, dR=0.2, M=1836.0, extra="",
                           dt=0.05, t_end=1.0, scheme="midpoint"))


def test_tdse_run_of_a_nuclei_input(tmp_path):
    """`tdse run` writes the file, its two pictures and a summary; a grid that cannot fit is
    refused in one line (exit 2) before anything is written; an x box too small for a
    bound fragment at R_max is refused naming grid.x_max."""
    import h5py

    from tdse.ui.cli import main
    text = SMALL.format(xm=14.0, dx=0.5, st='"dvr"', rmin=0.4, rmax=6.4, dR=0.2, M=1836.15267343,
                        extra="", dt=0.1, t_end=1.0, scheme="cfm4") + \
        "[field]\nE0 = 0.05\nomega = 0.2\nduration = 20.0\n[output]\nevery = 2\n"
    inp = tmp_path / "n.toml"
    inp.write_text(text)
    r = CliRunner().invoke(main, ["run", str(inp), "--out", str(tmp_path / "o"), "--plots"])
    assert r.exit_code == 0, r.output
    assert "1D + 1D H2+ model" in r.output and "wrote" in r.output
    with h5py.File(tmp_path / "o" / "nuc.h5") as f:
        assert f.attrs["format"] == "tdse-h2plus-nuclei/1"
        assert f["snapshots/psi"].shape == (6, 56, 30)
        assert f["observables/nuclear_density"].shape == (11, 30)
        assert f["observables/energy"].attrs["units"] == "hartree"
    assert (tmp_path / "o" / "nuc_nuclei.png").exists() and (tmp_path / "o" / "nuc_ker.png").exists()
    h5 = str(tmp_path / "o" / "nuc.h5")
    r = CliRunner().invoke(main, ["plot", h5, "--out", str(tmp_path / "p")])     # its own pictures
    assert r.exit_code == 0 and (tmp_path / "p" / "nuc_nuclei.png").exists(), r.output
    r = CliRunner().invoke(main, ["spectrum", h5, "--kind", "hhg"])
    assert r.exit_code == 0 and (tmp_path / "o" / "nuc_spectrum_hhg.png").exists(), r.output
    for args, says in ((["animate", h5], "tdse plot"), (["spectrum", h5, "--kind", "autocorrelation"], "--kind hhg"),
                       (["resume", h5], "does not resume")):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2 and says in r.output and "Traceback" not in r.output, (args, r.output)
    big = inp.read_text().replace("dx = 0.5", "dx = 0.0005").replace("dR = 0.2", "dR = 0.0005")
    inp.write_text(big)
    r = CliRunner().invoke(main, ["run", str(inp), "--out", str(tmp_path / "big")])
    assert r.exit_code == 2 and "nuclei.dR" in r.output and "GiB" in r.output
    assert not (tmp_path / "big").exists()
    inp.write_text(text.replace("R_max = 6.4", "R_max = 30.4"))
    r = CliRunner().invoke(main, ["run", str(inp), "--out", str(tmp_path / "o2")])
    assert r.exit_code == 2 and "grid.x_max" in r.output


def test_the_effective_input_reads_back_and_takes_set_values():
    cfg = small(field={"E0": 0.05, "omega": 0.2, "duration": 20.0}, extra='state = "franck_condon"')
    assert loads(cfg.source) == cfg and loads(__import__("tdse.keys").keys.to_toml(cfg)) == cfg
    two = cfg.with_value("nuclei.state", 2).with_value("nuclei.mass", 3670.48)
    assert two.nuclei.state == 2 and two.nuclei.mass == 3670.48 and two.grid == cfg.grid


def test_the_acceleration_is_the_second_derivative_of_x():
    """Ehrenfest: d^2<x>/dt^2 (central differences of the run's own <x>, dt = 0.01) equals the
    recorded -<dV/dx + kappa E>/mu_e in a field (no absorber: the norm is 1), which checks
    dV/dx, kappa and mu_e against the propagation itself."""
    rng = np.random.default_rng()
    cfg = small(dt=0.01, t_end=1.0, scheme="cfm4", extra='state = "franck_condon"',
                field={"E0": rng.uniform(0.05, 0.1), "omega": rng.uniform(0.2, 0.5), "duration": 2.0})
    m = nm.Model(cfg)
    psi, st = nm.initial_state(m), NucleiStepper(m)
    xs, acc = [], []
    for j in range(81):
        r = m.measure(psi, j * 0.01)
        xs.append(r["x_mean"])
        acc.append(r["acceleration"])
        psi = st.step(psi, j)
    xs, acc = np.array(xs), np.array(acc)
    fd = (xs[2:] - 2 * xs[1:-1] + xs[:-2]) / 0.01 ** 2
    assert np.abs(fd - acc[1:-1]).max() < 2e-4 * np.abs(acc).max()    # measured 4.2e-5 on 12 draws
    assert np.abs(acc).max() > 1e-3                                   # (0.0076-0.030 there)


def test_the_1d_studies_refuse_a_nuclei_input_in_one_line(tmp_path):
    from tdse.ui.cli import main
    inp = tmp_path / "n.toml"
    inp.write_text(SMALL.format(xm=12.0, dx=0.5, st='"dvr"', rmin=0.4, rmax=6.4, dR=0.2, M=1836.0, extra="",
                                dt=0.05, t_end=1.0, scheme="midpoint") + "[field]\nE0 = 0.05\nomega = 0.2\nduration = 1.0\n")
    r = CliRunner().invoke(main, ["states", str(inp)])
    assert r.exit_code == 2 and "[nuclei]" in r.output and "Traceback" not in r.output, r.output
    for args in (["converge", str(inp)],):
        r = CliRunner().invoke(main, args + ["--out", str(tmp_path / "o")])
        assert r.exit_code == 2 and "[nuclei]" in r.output and "Traceback" not in r.output, r.output


def test_a_scan_over_the_field_equals_each_members_own_run(tmp_path):
    """`tdse scan` of a [nuclei] input over two field keys (a 2 x 2 grid, stepped as one
    block, two batches): each member's fractions and KER read back from the file at its own
    coordinates equal that member's own serial run (tdse.simulate at its parameters), so a
    member that took another's field, or keys written in another order, fail here."""
    import h5py
    import json

    import tdse
    from tdse.ui.cli import main
    text = SMALL.format(xm=14.0, dx=0.5, st='"dvr"', rmin=0.4, rmax=6.4, dR=0.2, M=1836.15267343,
                        extra='state = 1\nabsorber_width = 1.0\nbound_radius = 3.0\ndissociated_R = 3.0\n'
                              '[absorber]\nwidth = 4.0', dt=0.1, t_end=3.0, scheme="cfm4") + \
        "[field]\nE0 = 0.05\nomega = 0.2\nduration = 3.0\n[output]\nobservables_every = 5\n"
    inp = tmp_path / "n.toml"
    inp.write_text(text)
    E0s, omegas = [0.04, 0.09], [0.15, 0.35]
    r = CliRunner().invoke(main, ["scan", str(inp), "--set", "field.E0=0.04,0.09", "--set", "field.omega=0.15,0.35",
                                  "--batch", "3", "--out", str(tmp_path / "o"), "-q", "--plots"])
    assert r.exit_code == 0, r.output
    assert "4 members in 2 batch(es)" in r.output and (tmp_path / "o" / "nuc_scan.png").exists()
    (tmp_path / "o" / "nuc_scan.png").unlink()        # tdse plot draws it again from the file
    r = CliRunner().invoke(main, ["plot", str(tmp_path / "o" / "nuc_scan.h5")])
    assert r.exit_code == 0 and (tmp_path / "o" / "nuc_scan.png").stat().st_size > 1000, r.output
    with h5py.File(tmp_path / "o" / "nuc_scan.h5") as f:
        assert json.loads(f.attrs["keys"]) == ["field.E0", "field.omega"]
        assert list(f["field.E0"][:]) == E0s and list(f["field.omega"][:]) == omegas
        got = {k: f[k][()] for k in ("dissociated", "ionised", "absorbed_x", "x_mean", "ker")}
    cfg = loads(text)
    for i, e0 in enumerate(E0s):
        for j, w in enumerate(omegas):
            one = tdse.simulate(cfg.with_value("field.E0", e0).with_value("field.omega", w))
            for k in ("dissociated", "ionised", "absorbed_x", "x_mean"):
                assert np.abs(got[k][i, j] - one.observables[k]).max() < 1e-8, (k, i, j)
            assert np.abs(got["ker"][i, j] - one.ker["probability"]).max() < 1e-8
    assert np.abs(got["x_mean"][0, 0] - got["x_mean"][1, 1]).max() > 1e-4    # the members differ
    try:
        import xarray
    except ImportError:
        return
    ds = xarray.open_dataset(tmp_path / "o" / "nuc_scan.h5", engine="h5netcdf", phony_dims="access")
    assert ds["dissociated"].dims == ("field.E0", "field.omega", "t")


def test_a_nuclei_scan_refuses_what_it_cannot_do(tmp_path):
    from tdse.ui.cli import main
    inp = tmp_path / "n.toml"
    inp.write_text(SMALL.format(xm=14.0, dx=0.5, st='"dvr"', rmin=0.4, rmax=6.4, dR=0.2, M=1836.0, extra="",
                                dt=0.1, t_end=0.5, scheme="cfm4") + "[field]\nE0 = 0.05\nomega = 0.2\nduration = 1.0\n")
    for args, key in ((["--set", "nuclei.mass=1836.0,3670.0"], "nuclei.mass"),
                      (["--set", "field.E0=0.01,0.02", "--keep-psi"], "--keep-psi")):
        r = CliRunner().invoke(main, ["scan", str(inp), *args, "--out", str(tmp_path / "o")])
        assert r.exit_code == 2 and key in r.output and "Traceback" not in r.output, r.output


def test_prepare_and_evolve_from_python():
    """docs/PYTHON.md's pieces on a [nuclei] config: tdse.prepare gives the model's plan,
    tdse.evolve steps psi(0) (and a stack of two states at once) as tdse.simulate does."""
    import tdse
    cfg = small(field={"E0": 0.05, "omega": 0.2, "duration": 2.0}, dt=0.1, scheme="cfm4")
    plan = tdse.prepare(cfg, backend="numpy")
    final = tdse.evolve(plan, plan.psi0).psi
    assert final.shape == plan.model.shape
    assert np.abs(final - tdse.simulate(cfg).psi).max() < 1e-13
    two = np.stack([plan.psi0, 1j * plan.psi0])
    from tdse.numerics.stepper import NucleiStepper
    field = cfg.potential.field
    both = tdse.evolve(plan, two, stepper=NucleiStepper(plan.model, np, fields=[field, field])).psi
    assert np.abs(both[0] - final).max() < 1e-9 and np.abs(both[1] - 1j * final).max() < 1e-9


@pytest.mark.parametrize("section, key, value, named", [
    ("nuclei", "mass", -1.0, "nuclei.mass"), ("nuclei", "dR", 0.0, "nuclei.dR"),
    ("nuclei", "R_max", 0.2, "nuclei.R_max"), ("nuclei", "bound_radius", 0.0, "nuclei.bound_radius"),
    ("nuclei", "dissociated_R", -2.0, "nuclei.dissociated_R"), ("nuclei", "absorber_width", 5.0, "nuclei.absorber_width"),
    ("nuclei", "absorber_strength", -1.0, "nuclei.absorber_strength"), ("nuclei", "state", 99, "nuclei.state"),
    ("field", "gauge", "velocity", "field.gauge"), ("initial", "state", 1, "initial"),
    ("output", "tsurff_radius", 5.0, "output.tsurff_radius"), ("propagator", "time_error", "companion", "propagator.time_error"),
    ("propagator", "method", "dense", "propagator.method")])
def test_each_bad_nuclei_value_is_refused_naming_its_key(section, key, value, named):
    import tomllib

    from tdse.config import parse
    data = tomllib.loads(SMALL.format(xm=12.0, dx=0.5, st='"dvr"', rmin=0.4, rmax=6.4, dR=0.2, M=1836.0, extra="",
                                      dt=0.05, t_end=1.0, scheme="midpoint"))
    data["field"] = {"E0": 0.05, "omega": 0.2, "duration": 1.0}
    data.setdefault(section, {})[key] = value
    with pytest.raises(ConfigError) as e:
        parse(data)
    assert named in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_masses_and_kappa_from_the_three_particles_in_the_lab():
    """mu_e, mu_N and kappa against the lab frame, for random positions and velocities of
    two nuclei (mass M) and the electron (mass 1): the kinetic energy is the centre of mass'
    plus mu_N R'^2/2 plus mu_e x'^2/2, and the dipole -x_e + X_1 + X_2 is X_cm - kappa x
    (x: the electron from the nuclei's centre, R = X_1 - X_2)."""
    rng = np.random.default_rng()
    M = rng.uniform(1000, 4000)
    mu_e, mu_N, kappa = nm.masses(M)
    X1, X2, xe, v1, v2, ve = rng.standard_normal(6)
    cm = lambda a, b, c: (M * a + M * b + c) / (2 * M + 1)
    kinetic = 0.5 * M * (v1 ** 2 + v2 ** 2) + 0.5 * ve ** 2
    internal = 0.5 * (2 * M + 1) * cm(v1, v2, ve) ** 2 + 0.5 * mu_N * (v1 - v2) ** 2 \
        + 0.5 * mu_e * (ve - 0.5 * (v1 + v2)) ** 2
    assert abs(kinetic - internal) < 1e-9 * kinetic
    assert abs((-xe + X1 + X2) - (cm(X1, X2, xe) - kappa * (xe - 0.5 * (X1 + X2)))) < 1e-12


def test_which_gpus_a_run_splits_over():
    """#57 item 2: Psi's columns go over every GPU given only where the benchmark measured a
    gain (2048 x 512 on 2 H200: 1.63x; 1024 x 512 slower), and never below SPLIT_MIN_COLUMNS
    columns a GPU; otherwise the first GPU alone; the memory each GPU then keeps counts the
    peers' blocks."""
    import tdse
    from tdse.backends.cupy.columns import bounds, bytes_per_gpu
    from tdse.run.nuclei import split_devices
    base = tdse.load_config("inputs/h2plus_nuclei.toml")

    def grid(nx, nr):
        return base.with_value("grid.dx", 60.0 / nx).with_value("nuclei.dR", 30.0 / nr)
    assert split_devices(grid(2048, 512), [0, 1]) == [0, 1]
    assert split_devices(grid(2048, 512), [2, 3, 0, 1]) == [2, 3, 0, 1]
    assert split_devices(grid(1024, 512), [0, 1]) == [0]
    assert split_devices(grid(8192, 256), [0, 1, 2, 3]) == [0]        # 64 columns a GPU
    assert split_devices(base, [1, 0]) == [1]
    assert split_devices(grid(2048, 512), [3]) == [3]
    assert bounds(150, 4) == [(0, 38), (38, 75), (75, 112), (112, 150)]
    nx, nr = 2048, 512
    one, two = bytes_per_gpu(nx, nr, 1), bytes_per_gpu(nx, nr, 2)
    assert one == 8 * nx * nx + 16 * nr * nr + 8 * nx * nr + 5 * 16 * nx * nr
    assert two == 8 * nx * nx + 16 * nr * 256 + 8 * nx * 256 + 16 * nx * 256 + 5 * 16 * nx * 256
