"""The observables' one table and the block path against the single-state definitions:
BlockMeasure (the grid sums of SUMS, finished by one formula each) against Measure (each
observable by its own function: the FFT derivative for <p>, gradient() for the
acceleration, the kinetic Operator for <H>) member by member, on random blocks whose
members differ in their molecule, field and absorber."""
from __future__ import annotations

import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure_rows(configs, x, phi, X0, t, X):
    """Each member's row by :class:`Measure` (its own configuration, eigenstates and psi(0)),
    stacked as BlockMeasure's names -> (B[, K])."""
    from tdse.model.observables import BlockMeasure, Measure
    rows = [Measure(c, np.asarray(x), phi[b], np.asarray(X0)[:, b])(t, np.asarray(X)[:, b], None)
            for b, c in enumerate(configs)]
    return {k: np.stack([r[k] for r in rows]) for k in BlockMeasure.NAMES}


def _case(name, key, values):
    import tdse
    cfg = tdse.load_config(os.path.join(ROOT, "inputs", name)).with_value(
        "propagator.time_error", "none")
    return [cfg.with_value(key, v) for v in values]


@pytest.mark.parametrize("name, sets, t", [
    ("h2plus_moving.toml", ("potential.centres.amplitude", [0.1, 0.3]), 0.77),
    ("h2plus_moving.toml", ("potential.a", [0.5, 0.7, 0.9]), 1.3),
    ("atom_hhg.toml", ("field.E0", [0.02, 0.05, 0.08]), 123.4),      # a field and an absorber
    ("tiny.toml", ("grid.stencil", [5]), 0.3),
])
def test_block_rows_equal_the_single_state_definitions(name, sets, t):
    """Every observable of a random block (psi(0) plus noise, so absorber layers, walls and
    the field all weigh) to 1e-11 of its scale: both are sums of ~N rounded terms (~N eps
    apart), and <p> by Parseval against the FFT derivative differs by rounding alone."""
    from tdse.model import states
    from tdse.model.grid import points
    from tdse.model.observables import BlockMeasure
    configs = _case(name, *sets)
    x = points(configs[0].grid)
    rng = np.random.default_rng()
    phi = np.stack([states.eigenstates(c, 0.0, 4)[1] for c in configs])
    X0 = phi[:, 0].T.astype(complex)
    X = X0 + 0.3 * (rng.standard_normal(X0.shape) + 1j * rng.standard_normal(X0.shape))
    got = BlockMeasure(configs, x, phi, X0, np)(t, X)
    want = measure_rows(configs, x, phi, X0, t, X)
    assert set(got) == set(want) == set(BlockMeasure.NAMES)
    for k in want:
        scale = max(1.0, np.abs(want[k]).max())
        assert np.abs(np.asarray(got[k]) - want[k]).max() <= 1e-11 * scale, k
    if "atom" in name:       # the case exercises the layers and the field
        assert np.all(got["layer_norm"] > 1e-6) and np.all(got["field"] != 0)


def test_a_row_that_skips_its_costly_parts_has_nan_there_and_the_same_bits_elsewhere():
    """BlockMeasure.raw's ``skip`` (a scan's rows whose energy, <p> and populations it keeps
    only at t_end): each skipped part NaN, and the observables that do not read it -- the
    acceleration a spectrum is made of among them -- the bits of the full row; skippable
    keeps a part its kept observables read."""
    from tdse.model import states
    from tdse.model.grid import points
    from tdse.model.observables import COSTLY, BlockMeasure, skippable
    configs = _case("atom_hhg.toml", "field.E0", [0.03, 0.06])
    x = points(configs[0].grid)
    rng = np.random.default_rng()
    phi = np.stack([states.eigenstates(c, 0.0, 3)[1] for c in configs])
    X0 = phi[:, 0].T.astype(complex)
    X = X0 + 0.3 * (rng.standard_normal(X0.shape) + 1j * rng.standard_normal(X0.shape))
    bm = BlockMeasure(configs, x, phi, X0, np)
    full = bm.finish([12.5], {k: np.stack([v]) for k, v in bm.raw(12.5, X).items() if k != "t"})
    parts = tuple(COSTLY)
    light = bm.finish([12.5], {k: np.stack([v]) for k, v in bm.raw(12.5, X, skip=parts).items() if k != "t"})
    skipped = {n for names in COSTLY.values() for n in names}
    for name in full:
        if name in skipped:
            assert np.all(np.isnan(light[name])), name
        else:
            assert np.array_equal(light[name], full[name]), name
    assert skippable({"acceleration"}) == parts
    assert skippable({"energy", "acceleration"}) == ("p", "amps")
    assert skippable(BlockMeasure.NAMES) == ()


def test_one_table_labels_the_run_and_the_scan_files():
    """The run file's observables and the scan file's are OBSERVABLES' entries (units and
    descriptions), the scan's those a block measures; every sum SUMS names but "edge" (the
    run's warning of norm at the walls reads it) is read by an observable's formula
    (BlockMeasure.finish: changing one changes a result)."""
    from tdse.model.observables import OBSERVABLES, SUMS, BlockMeasure
    from tdse.run import scanfile, snapshots
    table = {o.name: o for o in OBSERVABLES}
    run = {k: v for k, v in snapshots.OBSERVABLE_DATASETS.items() if k not in ("t", "step")}
    assert list(run) == list(table)
    for k, (_, dtype, key, unit, desc, dims) in run.items():
        assert (dtype, unit, desc, dims) == (table[k].dtype, table[k].unit, table[k].description,
                                             table[k].dims)
        assert (key == "k") == bool(dims)
    assert scanfile.OBSERVABLES == {o.name: (o.unit, o.description) for o in OBSERVABLES if o.block}
    assert BlockMeasure.NAMES == tuple(scanfile.OBSERVABLES)
    configs = _case("atom_hhg.toml", "field.E0", [0.05])
    from tdse.model.grid import points
    x = points(configs[0].grid)
    K, n = 2, configs[0].grid.n
    bm = BlockMeasure(configs, x, np.ones((1, K, n)) / n, np.ones((n, 1), complex), np)
    cols = {"sums": np.random.default_rng().uniform(1, 2, (1, len(SUMS), 1)),
            "amps": np.ones((1, K, 1))}
    base = bm.finish([1.0], cols)
    for j, name in enumerate(SUMS):
        if name == "edge":
            continue
        c = {"sums": cols["sums"].copy(), "amps": cols["amps"]}
        c["sums"][0, j] *= 1.5
        moved = bm.finish([1.0], c)
        assert any(not np.array_equal(moved[k], base[k]) for k in base), name


def test_x_width_of_a_free_packet_spreads_as_the_analytic_one():
    """x_width of a free Gaussian packet (V = 0, |psi(0)|^2 of standard deviation sigma,
    momentum k0) against sigma(t) = sigma sqrt(1 + (t / (2 sigma^2))^2): H is constant, so
    the run is exact to its exponential's tolerance (1e-10) and the box (the packet stays
    8 sigma(t) from the walls); 1e-7 holds, at fresh random sigma and k0.  t_end = 6: the
    widest packet drawn (sigma 1.4) spreads 1.8x by then (at t = 3 a draw of 1.36 had spread
    only 1.28x, under the check that it spreads at all)."""
    import tdse
    rng = np.random.default_rng()
    sigma, k0 = rng.uniform(0.8, 1.4), rng.uniform(-0.5, 0.5)
    cfg = tdse.load_config(f"""
name = "free"
[grid]
x_min = -40.0
x_max = 40.0
dx = 0.1
stencil = "dvr"
[potential]
kind = "expression"
V = "0 * x"
[initial]
state = "gaussian"
sigma = {sigma!r}
k0 = {k0!r}
[time]
dt = 0.05
t_end = 6.0
""")
    obs = tdse.simulate(cfg, backend="numpy").observables
    want = sigma * np.sqrt(1 + (obs["t"] / (2 * sigma ** 2)) ** 2)
    assert want[-1] > 1.3 * sigma
    np.testing.assert_allclose(obs["x_width"], want, rtol=1e-7, atol=0)
