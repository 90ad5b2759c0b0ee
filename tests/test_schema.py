"""Every dataset of a run file says what it holds, by value (#28 item 1): its units against
one table written here (independent of tdse.run.snapshots' own), and a description that
names what it is."""
from __future__ import annotations

import h5py
import numpy as np
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
    "snapshots/steps_taken": ("1", "time steps taken"),
    "snapshots/step_min": ("hbar/E_h", "smallest time step"),
    "observables/t": ("hbar/E_h", "time"), "observables/step": ("1", "step"),
    "observables/norm": ("1", "|psi|^2"), "observables/energy": ("hartree", "H(t)"),
    "observables/x_mean": ("bohr", "<x>"), "observables/x_width": ("bohr", "width"),
    "observables/p_mean": ("hbar/bohr", "<p>"),
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


#: the fixed datasets' descriptions, whole (what a reader of the file sees)
DESCRIPTIONS = {
    "x": "grid points x_j = x_min + j dx", "centre": "centre index",
    "state": "eigenstate index (n nodes)", "potential/V0": "V(x, 0)",
    "states/energies": "lowest eigenvalues of H(0)",
    "states/phi": "lowest eigenstates of H(0), sum phi^2 dx = 1",
}


def test_fixed_datasets_descriptions_scales_and_creation_time(run_file):
    """The fixed datasets' descriptions whole; the dimension scales named as the netCDF
    dimensions (x, centre, state, t) and attached where each axis runs (phi: state, x; every
    table's rows: its t); the creation time in UTC."""
    def scale_names(ds, axis):
        return [h5py.h5ds.get_scale_name(s.id).decode() for s in ds.dims[axis].values()]

    with h5py.File(run_file) as f:
        for name, desc in DESCRIPTIONS.items():
            assert f[name].attrs["description"] == desc, name
        for name in ("x", "centre", "state", "snapshots/t", "observables/t"):
            assert h5py.h5ds.get_scale_name(f[name].id).decode() == name.split("/")[-1]
        assert scale_names(f["states/phi"], 0) == ["state"] and scale_names(f["states/phi"], 1) == ["x"]
        assert scale_names(f["potential/V0"], 0) == ["x"]
        assert scale_names(f["states/energies"], 0) == ["state"]
        assert scale_names(f["snapshots/psi"], 0) == ["t"] and scale_names(f["snapshots/psi"], 1) == ["x"]
        assert scale_names(f["observables/energy"], 0) == ["t"]
        assert scale_names(f["operator/P"], 0) == ["t"] and scale_names(f["operator/P"], 1) == ["state"]
        assert f.attrs["created"].endswith("+00:00")


def test_read_keeps_only_whole_snapshots_of_every_group(run_file, tmp_path):
    """A killed run may leave a last row written in part: read() returns the rows up to
    snapshots_complete for the snapshots and operator groups alike."""
    import shutil

    from tdse.run.snapshots import read
    path = tmp_path / "killed.h5"
    shutil.copy(run_file, path)
    whole = read(run_file)
    n = int(whole["attrs"]["snapshots_complete"])
    with h5py.File(path, "r+") as f:
        for name in ("snapshots/psi", "operator/P"):
            f[name].resize(f[name].shape[0] + 1, axis=0)
    got = read(path)
    assert got["snapshots/psi"].shape[0] == n and got["operator/P"].shape[0] == n
    assert (got["operator/P"] == whole["operator/P"]).all()


def test_paths_and_unusable_files_are_named_in_one_line(run_file, tmp_path):
    """final_path strips only '.part'; a file that is not HDF5 is refused with HDF5's own
    reason; a format attribute stored as bytes is read as text; a run file without its
    snapshots is named damaged, with what is missing."""
    from tdse.run.snapshots import FORMAT, NotOurFile, final_path, open_checked, resume_state
    assert final_path("run.h5.part") == "run.h5" and final_path("run.h5") == "run.h5"
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    with pytest.raises(NotOurFile, match=r"junk.h5: not a readable HDF5 file \(truncated or damaged\?\): .*signature"):
        open_checked(junk)
    raw = tmp_path / "bytes.h5"
    with h5py.File(raw, "w") as f:
        f.attrs["format"] = np.bytes_(FORMAT)      # read back as bytes (fixed-length ASCII)
    open_checked(raw).close()
    damaged = tmp_path / "damaged.h5"
    with h5py.File(damaged, "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["complete"] = False
        f.create_dataset("snapshots/step", data=[0, 5])
    with pytest.raises(NotOurFile, match=r"damaged.h5: damaged run file \(missing .*psi"):
        resume_state(damaged)


def test_attribute_values_and_text_read_back_from_bytes(run_file, tmp_path):
    """Attributes that are not HDF5 scalars are written as JSON (NumPy numbers as floats),
    None as 'none'; text attributes stored as bytes (another writer, an older h5py) come
    back from resume_state as str."""
    import json
    import shutil

    from tdse.run.snapshots import _jsonable, resume_state
    assert _jsonable({"a": np.float64(1.5), "b": [1, 2]}) == json.dumps({"a": 1.5, "b": [1, 2]})
    assert _jsonable((np.float32(0.5),)) == "[0.5]" and _jsonable(None) == "none"
    assert _jsonable(3) == 3 and _jsonable("s") == "s"
    plain, raw = tmp_path / "plain.h5", tmp_path / "bytes.h5"
    for p in (plain, raw):
        shutil.copy(run_file, p)
        with h5py.File(p, "r+") as f:
            f.attrs["complete"] = False                  # as a stopped run's file
    with h5py.File(raw, "r+") as f:
        f.attrs["effective_toml"] = np.bytes_(str(f.attrs["effective_toml"]).encode())
        f.attrs["name"] = np.bytes_(b"schema")
    want, got = resume_state(plain), resume_state(raw)
    assert isinstance(got["input_toml"], str) and got["input_toml"] == want["input_toml"]
    assert got["attrs"]["name"] == "schema" == want["attrs"]["name"]
