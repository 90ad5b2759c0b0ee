"""#28: one fingerprint of mgemm.expm's memory model over 96 plans (theta 1e-3..300, split
and complex, auto and taylor, with and without formulas, complex128 and complex64): the
md5 of every (peak_matrices live, pool) pair.  Run in a mutmut mutants/ tree with
MUTANT_UNDER_TEST=<mutant>: a mutant whose fingerprint equals the unmutated one changes no
prediction of any plan kind (evidence that it is equivalent)."""
import hashlib
import itertools

import numpy as np

from mgemm.expm import peak_matrices
from mgemm.plan import plan_expm

out = []
for th, split, method, form, dt in itertools.product(
        (1e-3, 0.1, 0.5, 1.0, 3.0, 10.0, 40.0, 300.0), (True, False), ("auto", "taylor"),
        (False, True), (np.complex128, np.complex64)):
    if method == "taylor" and form:
        continue
    u = 2.0 ** -53 if dt == np.complex128 else 2.0 ** -24
    p = plan_expm(th, method=method, terms=14, tolerance=1e-12 if dt == np.complex128 else 1e-6,
                  unit_roundoff=u, split=split, unitary=True, use_formulas=form)
    out.append((peak_matrices(p, dt), peak_matrices(p, dt, pool=True)))
print(len(out), hashlib.md5(repr(out).encode()).hexdigest())
