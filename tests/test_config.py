"""tdse.config: every validation error is one line naming the key and value."""
from pathlib import Path

import pytest

from tdse.config import ConfigError, load, loads

GOOD = """
name = "t"
[grid]
x_min = -6.4
x_max = 6.4
dx = 0.2
[potential]
a = 0.5
[[potential.centres]]
x0 = -1.0
Z = 2.0
[time]
dt = 0.01
t_end = 0.5
"""


def test_good_minimal_defaults():
    c = loads(GOOD)
    assert c.grid.n == 64 and c.time.steps == 50
    assert c.propagator.method == "auto" and c.output.every == 50
    assert c.potential.static and c.initial.state == 0


def edit(section_line, new):
    return GOOD.replace(section_line, new)


CASES = [
    (edit("dx = 0.2", "dx = -0.2"), "grid.dx", "> 0"),
    (edit("dx = 0.2", "dx = 0.0"), "grid.dx", "> 0"),
    (edit("dx = 0.2", "dx = nan"), "grid.dx", "finite"),
    (edit("dx = 0.2", "dx = inf"), "grid.dx", "finite"),
    (edit("dx = 0.2", "dx = 0.3"), "grid.dx", "whole number"),
    (edit("dx = 0.2", 'dx = "0.2"'), "grid.dx", "number"),
    (edit("dx = 0.2", "dx = true"), "grid.dx", "number"),
    (edit("x_min = -6.4", "x_min = 7.0"), "grid.x_min", "< grid.x_max"),
    (edit("dx = 0.2", "dx = 0.2\nstencil = 4"), "grid.stencil", "3 or 5"),
    (edit("dx = 0.2", "dx = 0.2\nfoo = 1"), "grid.foo", "unknown key"),
    (edit("dt = 0.01", "dt = 0.0"), "time.dt", "> 0"),
    (edit("dt = 0.01", "dt = -1.0"), "time.dt", "> 0"),
    (edit("dt = 0.01", "dt = 0.03"), "time.t_end", "whole number"),
    (edit("dt = 0.01\n", ""), "time.dt", "missing"),
    (edit("a = 0.5", "a = -0.5"), "potential.a", "> 0"),
    (edit("Z = 2.0", "Z = nan"), "potential.centres[0].Z", "finite"),
    (edit("Z = 2.0", "Z = 2.0\nspeed = 1"), "potential.centres[0].speed", "unknown"),
    (GOOD.replace('name = "t"', 'name = "a/b"'), "name", "letters"),
    (GOOD + "[propagator]\nmethod = \"pade\"\n", "propagator.method", "taylor"),
    (GOOD + "[propagator]\nterms = 0\n", "propagator.terms", ">= 1"),
    (GOOD + "[propagator]\nterms = 10.0\n", "propagator.terms", "integer"),
    (GOOD + "[propagator]\ntolerance = 2.0\n", "propagator.tolerance", "< 1"),
    (GOOD + "[output]\nevery = 0\n", "output.every", ">= 1"),
    (GOOD + "[output]\npopulations = 1000\n", "output.populations", "<= 64"),
    (GOOD + "[initial]\nstate = 64\n", "initial.state", "<= 63"),
    (GOOD + "[initial]\nstate = \"excited\"\n", "initial.state", "gaussian"),
    (GOOD + "[initial]\nstate = 0\nsigma = 1.0\n", "initial.sigma", "gaussian"),
    (GOOD + "[initial]\nstate = \"gaussian\"\nsigma = 0.0\n", "initial.sigma", "> 0"),
    (GOOD + "[extra]\nx = 1\n", "extra", "unknown"),
    ("name = 'x'\n[grid\n", "", "not valid TOML"),
]


@pytest.mark.parametrize("text,key,msg", CASES)
def test_bad_input_names_key(text, key, msg):
    with pytest.raises(ConfigError) as e:
        loads(text)
    s = str(e.value)
    assert "\n" not in s
    assert key in s and msg in s


def test_grid_too_large_for_memory():
    """The precheck (before any work) refuses a grid whose method's matrices do not fit."""
    from tdse.numerics.precheck import memory_check
    cfg = loads(GOOD.replace("dx = 0.2", "dx = 0.0001"))
    with pytest.raises(ConfigError, match=r"grid.dx .*largest N that fits"):
        memory_check(cfg, 2**30)


@pytest.mark.parametrize("method", ["chebyshev", "dense", "auto"])
def test_the_memory_refusal_counts_what_each_method_keeps(method):
    """#58 item 4: a matrix-free (Chebyshev) run is estimated by its vectors of N -- not the
    dense matrices it does not keep -- and says so; the largest N it names is the largest
    whose estimate fits; auto is held to its least-needing candidate (it was held to the
    dense method's matrices: a Chebyshev-sized run refused)."""
    import re
    from tdse.numerics import exponentials, precheck as pc
    cfg = loads(GOOD.replace("dx = 0.2", "dx = 0.0001")).with_value("propagator.method", method)
    n = cfg.grid.n
    cls = exponentials.Chebyshev if method != "dense" else exponentials.Dense
    need = pc.host_bytes(cls, n, False)
    assert need == cls.host_matrices(False) * 16 * n * n + pc.RUN_VECTORS * 16 * n + pc.BASE_BYTES
    assert pc.memory_check(cfg, need) == need
    with pytest.raises(ConfigError) as e:
        pc.memory_check(cfg, need - 1)
    msg = str(e.value)
    assert msg.startswith("grid.dx = 0.0001: gives N = ") and "\n" not in msg
    assert ("no N x N matrix" in msg) == (method != "dense")
    n_fit = int(re.search(r"largest N that fits is about (\d+)", msg).group(1))
    assert pc.host_bytes(cls, n_fit, False) <= need - 1 < pc.host_bytes(cls, n_fit + 1, False)
    assert n_fit < n


def test_missing_file_and_non_utf8(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load(tmp_path / "nope.toml")
    p = tmp_path / "bad.toml"
    p.write_bytes(b"name = \"\xff\xfe\"\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load(p)


def test_shipped_inputs_load(inputs_dir):
    import os
    for f in os.listdir(inputs_dir):
        loads(Path(inputs_dir, f).read_text())


def test_the_lab_unit_constants_are_codata_2018():
    """#58 item 7: the atomic unit of intensity 1/2 eps0 c E_au^2 and omega * lambda =
    2 pi c a0 from CODATA 2018's values (E_au = 5.14220674763e11 V/m, eps0 =
    8.8541878128e-12 F/m, c = 137.035999084 a.u., a0 = 0.0529177210903 nm), to the nine
    digits the constants are written with (it was CODATA 2014's 3.50944506e16, 1.3e-8 off)."""
    import math
    from tdse.config import INTENSITY_AU, OMEGA_NM
    I_au = 0.5 * 8.8541878128e-12 * 299792458.0 * 5.14220674763e11 ** 2 / 1e4     # W/cm^2
    assert abs(INTENSITY_AU / I_au - 1) < 5e-9
    assert abs(OMEGA_NM / (2 * math.pi * 137.035999084 * 0.0529177210903) - 1) < 5e-9


def test_laser_in_lab_units():
    """#25: intensity (W/cm^2), wavelength (nm), cycles in place of E0, omega, duration:
    converted with the stated constants, exactly one of each pair, kept as given."""
    import math
    from tdse.config import INTENSITY_AU, OMEGA_NM, to_toml
    base = GOOD.rstrip() + "\n[field]\nintensity = 1e14\nwavelength = 800.0\ncycles = 4.0\n"
    cfg = loads(base)
    f = cfg.field
    assert f.E0 == pytest.approx(math.sqrt(1e14 / INTENSITY_AU)) and f.E0 == pytest.approx(0.05338, rel=1e-4)
    assert f.omega == pytest.approx(OMEGA_NM / 800.0) and f.omega == pytest.approx(0.056954, rel=1e-5)
    assert f.duration == pytest.approx(4 * 2 * math.pi / f.omega)
    again = loads(to_toml(cfg))
    assert again.field == f and "intensity = 1e+14" in to_toml(cfg).replace("100000000000000.0", "1e+14")
    assert cfg.with_value("field.E0", 0.01).field.E0 == 0.01          # E0 replaces intensity
    for bad, words in ((base.replace("wavelength = 800.0", "wavelength = 800.0\nomega = 0.05"), "both given"),
                       (base.replace("cycles = 4.0\n", ""), "neither given"),
                       (base.replace("intensity = 1e14", "intensity = -1.0"), "field.intensity")):
        with pytest.raises(ConfigError, match=words):
            loads(bad)


def test_config_mirrors_the_toml_tables():
    cfg = loads(GOOD.rstrip() + "\n[field]\nE0 = 0.02\nomega = 0.3\nduration = 5.0\n")
    assert cfg.field is cfg.potential.field and cfg.field.E0 == 0.02
    assert cfg.with_value("field.E0", 0.03).field.E0 == 0.03
    with pytest.raises(ConfigError, match="field.E0"):
        cfg.with_value("field.E0", "strong")


def test_time_error_key_is_validated():
    with pytest.raises(ConfigError, match=r'propagator.time_error = .*"companion", "window" or "none"'):
        loads(GOOD.rstrip() + '\n[propagator]\ntime_error = "sometimes"\n')
    with pytest.raises(ConfigError, match=r"propagator.error_window .*time_error = \"window\""):
        loads(GOOD.rstrip() + '\n[propagator]\ntime_error = "companion"\nerror_window = 0.1\n')


def test_with_values_from_a_shared_source_equals_with_value_one_at_a_time(inputs_dir):
    """A scan's members: several keys set from the input parsed once (the tables a member
    changes copied, the source never written) equal with_value applied key by key; a bad
    key or value is named."""
    import copy
    import tomllib

    from tdse.config import to_toml, with_value, with_values
    import os
    cfg = load(os.path.join(inputs_dir, "h2plus_moving.toml"))
    source = tomllib.loads(to_toml(cfg))
    before = copy.deepcopy(source)
    pairs = [("potential.centres.Z", 0.7), ("grid.dx", 0.2), ("time.dt", 0.01)]
    got = with_values(cfg, pairs, source)
    assert source == before
    ref = cfg
    for k, v in pairs:
        ref = with_value(ref, k, v)
    assert got == ref and all(c.Z == 0.7 for c in got.potential.centres)
    assert with_values(cfg, [], source) == cfg                     # the source untouched
    with pytest.raises(ConfigError, match="grid.nope"):
        with_values(cfg, [("grid.nope", 1.0)], source)
    with pytest.raises(ConfigError, match="grid.dx"):
        with_values(cfg, [("grid.dx", -1.0)], source)
