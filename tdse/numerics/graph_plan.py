"""The host side of a CUDA-graph step (:mod:`tdse.numerics.graphs`): every per-step scalar
of the block Chebyshev step, planned :data:`CHUNK` steps at a time with NumPy."""
from __future__ import annotations

import numpy as np

#: steps whose scalars are planned at once on the host (vectorised), and a segment's rows:
#: 256 where 64 had been -- the planner's chunk 0.22 against 0.136 ms on 2 cores (0.86 against
#: 2.1 us a step, ``benchmarks/archive/planner_chunk.py``), and one H200's loop at N = 8192
#: (3-point, 40000 steps, populations every 50, ``setting_ab.py ... chunk 64 256``) 34.8
#: against 43.9 us a step (``chunk_ab_h200x1_20261130T1250.txt``)
CHUNK = 256
#: the blocks a graph step's tap fills (psi after the step copied into a row of each: a
#: run's observables' block and the local error estimate's block of psi before each step)
TAPS = 2
#: the segment's head: [counter, stride, TAPS slots a step for CHUNK steps]
HEAD = 2 + TAPS * CHUNK


#: plan the next chunk's scalars in a thread while this one steps
#: (:meth:`tdse.numerics.graphs.GraphStep._plan`; False: each planned when it is reached --
#: a test's way to force that branch)
PLAN_AHEAD = True


def plan_ahead() -> bool:
    """Whether to plan the next chunk's scalars in a thread (:data:`PLAN_AHEAD`)."""
    return PLAN_AHEAD


_PLANNING = []


def planning_thread():
    """The process's one planning thread (a ThreadPoolExecutor of one, made at first use)."""
    if not _PLANNING:
        import concurrent.futures
        _PLANNING.append(concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tdse-plan"))
    return _PLANNING[0]


def segment(out, P, A, n_p, slots):
    """The device segment of steps' rows (``tdse_row_fetch``, :data:`tdse.backends.cupy.chain.ROWS`)
    written into the start of ``out`` (returned, that part): [0 (the counter), the stride,
    ``slots`` (m x :data:`TAPS`: a step's tap slots; CHUNK x TAPS places), then a row a
    step: its parameters ``P``, its coefficients ``A`` (complex) from ``n_p``]."""
    m = len(P)
    stride = n_p + 2 * A.shape[1]
    need = HEAD + m * stride
    out[0], out[1] = 0.0, stride
    out[2:2 + TAPS * m] = np.asarray(slots).reshape(-1)
    rows = out[HEAD:need].reshape(m, stride)
    rows[:, :P.shape[1]] = P
    rows[:, n_p:] = np.ascontiguousarray(A).view(np.float64)
    return out[:need]


class Planner:
    """The host side of a graph step: every per-step scalar of the block Chebyshev step
    (:meth:`chunk`), planned CHUNK steps at a time with NumPy (no GPU needed: tested on the
    CPU against the per-step computation, element by element equal)."""

    def __init__(self, stepper, bounds=None):
        self.st, self.scheme = stepper, stepper.scheme
        self.rows = [(s, row) for s, row in zip(self.scheme.scales(), self.scheme.factors)]
        self.nt = len(self.scheme.factors[0])
        # (steps, E, 2): (lo, hi) of each exponential of the steps js at times (steps, nt):
        # default the batch's bounds from the parameters (as BatchStepper.step); a single
        # run passes its own (from its V, as Stepper.step)
        self.bounds = bounds or self._batch_bounds
        self._K = {}            # the last K of each exponential (terms_near's guess)
        from . import chebyshev
        self._counts = chebyshev.TermCounts(stepper.tol)   # its own: planned in a thread
        # the velocity gauge: each member's a = sum_i w_i A(t_i) and q = sum_i w_i A(t_i)^2/2
        # per exponential (BatchStepper.generators), scaled by alpha into the parameter row
        self.velocity = bool(stepper.potential.velocity)
        self._vt = None         # (times, (a, q)): the last chunk's

    def chunk(self, j0, m=None):
        """The scalars of steps j0 .. j0 + m - 1 (m <= CHUNK, default CHUNK) at once,
        vectorised over the steps (what BatchStepper.step / expm_apply compute one step at a
        time, element by element the same operations, whatever m): per step the pattern of
        term counts, the parameter row (headers, then the times' field and centres) and the
        coefficient row ([eps_k (-i)^k J_k(R) ..., e^(-i dt c)] per exponential).  None
        where an exponential has r = 0."""
        st, cfg = self.st, self.st.config
        dt, E = cfg.time.dt, len(self.rows)
        M = CHUNK if m is None else m
        js = np.arange(j0, j0 + M)
        t = np.zeros(M) if st.static else js * dt
        times = t[:, None] + np.asarray(self.scheme.nodes)[None, :] * dt      # (steps, nt)
        if self.velocity:
            va, vq = self.velocity_terms(times)
        LH = self.bounds(js, times)                                          # (steps, E, 2)
        lo, hi = LH[..., 0], LH[..., 1]
        c, r = 0.5 * (lo + hi), 0.5 * (hi - lo)
        if (r == 0.0).any():
            return None
        R = dt * r
        K = self._terms_many(R)
        k = np.arange(K.max() + 1)
        coef = self._coefficients(R, K, k.size)
        phase = np.exp(-1j * dt * c)
        sizes = (K + 2).sum(axis=1)
        A = np.zeros((M, sizes.max()), dtype=np.complex128)
        # per step, per exponential: its K + 1 coefficients, then its phase
        offs = np.concatenate([np.zeros((M, 1), dtype=int), np.cumsum(K + 2, axis=1)[:, :-1]], axis=1)
        steps = np.broadcast_to(np.arange(M)[:, None], (M, k.size))
        for e in range(E):
            used = k[None, :] <= K[:, e:e + 1]
            A[steps[used], (offs[:, e:e + 1] + k[None, :])[used]] = coef[:, e, :][used]
            A[np.arange(M), offs[:, e] + K[:, e] + 1] = phase[:, e]
        alpha = 2.0 / r
        heads = [np.concatenate([alpha[:, e:e + 1], c[:, e:e + 1], (alpha[:, e] * s)[:, None],
                                 np.broadcast_to(np.asarray(row, dtype=float), (M, self.nt))], axis=1)
                 for e, (s, row) in enumerate(self.rows)]
        P = [st.potential.blocks_many(times)]
        if self.velocity:       # per exponential alpha a_b, then alpha q_b (GraphStep.vbase)
            P += [z for e in range(E) for z in (alpha[:, e:e + 1] * va[:, e], alpha[:, e:e + 1] * vq[:, e])]
        P = np.concatenate(heads + P, axis=1)
        return j0, list(map(tuple, K.tolist())), P, A, sizes

    @staticmethod
    def _coefficients(R, K, width):
        """chebyshev.coefficients(R, K), (*R.shape, width): each distinct R once -- without a
        field every step's spectral bounds, so its R, are the same -- and a few of them one at
        a time (the scalar path: the same operations, ~10x faster than the array path's
        recurrence for one element).  With the patterns made from one ``tolist``: a chunk
        0.246 -> 0.135 ms on 2 cores (h2plus_moving_large, N = 8192, 3-point, no field)."""
        from . import chebyshev
        Ru, first, back = np.unique(R, return_index=True, return_inverse=True)
        Ku = K.ravel()[first]
        if len(Ru) > 4:
            return chebyshev.coefficients(Ru, Ku)[back.reshape(R.shape)]
        out = np.zeros((len(Ru), width), dtype=np.complex128)
        for i, (x, m) in enumerate(zip(Ru, Ku)):
            out[i, :m + 1] = chebyshev.coefficients(float(x), int(m))
        return out[back.reshape(R.shape)]

    def _terms_many(self, R):
        """(steps, E) term counts: :meth:`_terms` of each R, those inside an interval met
        before looked up at once (the same K: terms(R) is a function of R alone)."""
        K = self._counts.known(R)
        for i, e in zip(*np.nonzero(K == 0)):
            K[i, e] = self._terms(R[i, e], e)
        return K

    def _terms(self, R, e):
        """chebyshev.terms(R, tol) (:class:`chebyshev.TermCounts`, from exponential e's
        last K)."""
        K = self._K[e] = self._counts(R, self._K.get(e, 0))
        return K

    def velocity_terms(self, times):
        """(a, q), each (steps, E, B): the velocity gauge's sum_i w_ki A_b(t_i) and
        sum_i w_ki A_b(t_i)^2 / 2 of every exponential k and member b at the steps' ``times``
        (steps, nt): :meth:`BatchStepper.generators`' values, the same operations."""
        if self._vt is not None and self._vt[0] is times:     # (the bounds' own, this chunk)
            return self._vt[1]
        pot = self.st.potential
        A = np.array([[pot.vector(float(t)) for t in row] for row in times])    # (steps, nt, B)
        a = [sum(w * A[:, i] for i, w in enumerate(row) if w) for _, row in self.rows]
        q = [sum(w * 0.5 * A[:, i] * A[:, i] for i, w in enumerate(row) if w) for _, row in self.rows]
        self._vt = times, (np.stack(a, axis=1), np.stack(q, axis=1))
        return self._vt[1]

    def _batch_bounds(self, js, times):
        """(steps, E, 2): the batch's spectral bounds from the parameters per step
        (BatchPotential.bounds and hamiltonian.spectrum_bounds, vectorised over steps; in
        the velocity gauge V's bounds moved by the members' A^2/2 and widened by
        |a| P_max, as BatchStepper.step_eager has them)."""
        from ..model.hamiltonian import kinetic_max
        from ..model.momentum import momentum_max
        g, pot = self.st.config.grid, self.st.potential
        out = np.empty((len(js), len(self.rows), 2))
        if self.velocity:
            va, vq = self.velocity_terms(times)
        for e, (s, row) in enumerate(self.rows):
            vmin, vmax = pot.bounds_many(times, row)
            if not self.velocity:
                out[:, e, 0], out[:, e, 1] = vmin, s * kinetic_max(g.stencil, g.dx) + vmax
                continue
            vmin, vmax = vmin + vq[:, e].min(axis=1), vmax + vq[:, e].max(axis=1)
            m = np.abs(va[:, e]).max(axis=1) * momentum_max(g.stencil, g.dx)
            out[:, e, 0], out[:, e, 1] = vmin - m, s * kinetic_max(g.stencil, g.dx) + vmax + m
        return out
