"""Every dataset of a run file says what it holds, by value (#28 item 1): its units against
one table written here (independent of tdse.run.snapshots' own), and a description that
names what it is."""
from __future__ import annotations

import h5py
import pytest

import tdse

#: dataset -> (units, a word its description must contain); atomic units throughout
EXPECTED = {
    "x": ("bohr", "grid"), "state": ("1", "eigenstate"), "centre": ("1", "centre"),
    "potential/V0": ("hartree", "V(x, 0)"),
    "states/energies": ("hartree", "eigenvalues"), "states/phi": ("bohr^-1/2", "eigenstates"),
    "snapshots/t": ("hbar/E_h", "time"), "snapshots/step": ("1", "step"),
    "snapshots/psi": ("bohr^-1/2", "wavefunction"), "snapshots/centres": ("bohr", "positions"),
    "snapshots/nodes": ("1", "sign changes"), "snapshots/time_error": ("1", "companion"),
    "snapshots/time_error_populations": ("1", "populations"),
    "observables/t": ("hbar/E_h", "time"), "observables/step": ("1", "step"),
    "observables/norm": ("1", "|psi|^2"), "observables/energy": ("hartree", "H(t)"),
    "observables/x_mean": ("bohr", "<x>"), "observables/p_mean": ("hbar/bohr", "<p>"),
    "observables/acceleration": ("bohr/(hbar/E_h)^2", "NOT divided"),
    "observables/acceleration_normalised": ("bohr/(hbar/E_h)^2", "divided by the remaining norm"),
    "observables/field": ("E_h/(e bohr)", "E(t)"), "observables/yield": ("1", "1 - norm"),
    "observables/layer_norm": ("1", "absorbing layers"), "observables/yield_flux": ("1", "entered"),
    "observables/autocorrelation": ("1", "<psi(0)|psi(t)>"), "observables/n_mean": ("1", "node"),
    "observables/populations_h0": ("1", "H(0)"), "observables/populations_ht": ("1", "H(t)"),
    "observables/energies_ht": ("hartree", "eigenvalues"),
    "operator/P": ("1", "|<m|U(t)|n>|^2"),
}


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    cfg = {"name": "schema", "grid": {"x_min": -6.4, "x_max": 6.4, "dx": 0.2, "stencil": 3},
           "potential": {"a": 0.5, "centres": [{"x0": 0.0, "Z": 1.0, "amplitude": 0.2, "frequency": 2.0}]},
           "absorber": {"width": 2.0}, "time": {"dt": 0.01, "t_end": 0.1},
           "propagator": {"method": "dense", "operator": True}, "output": {"every": 5}}
    return tdse.simulate(cfg, backend="numpy", out=str(tmp_path_factory.mktemp("s"))).path


def test_every_dataset_has_its_units_and_description(run_file):
    seen = []
    with h5py.File(run_file) as f:
        f.visititems(lambda name, obj: seen.append(name) if isinstance(obj, h5py.Dataset) else None)
        data = [n for n in seen if not n.startswith("resume/")]
        assert set(data) == set(EXPECTED), sorted(set(data) ^ set(EXPECTED))
        for name, (units, word) in EXPECTED.items():
            a = f[name].attrs
            assert a["units"] == units, (name, a["units"])
            assert word in a["description"], (name, a["description"])
        assert "atomic units" in f.attrs["units"]
