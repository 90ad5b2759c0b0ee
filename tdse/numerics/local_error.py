"""The local time error of one step, estimated from its leading term: a run's error bar
without a second propagation.

A scheme of order p (:mod:`tdse.numerics.schemes`) makes a local error

    L(h) = S(h) u - E(h) u = h^(p+1) C u + O(h^(p+2)),

S the step, E the exact flow of u' = A(t) u, A = -i H (atomic units, hbar = 1).  Expanded
about the step's start t, A(t + s) = sum_k a_k s^k / k!, the exact flow's Taylor series is
the time-ordered exponential's, (n+1) E_(n+1) = sum_k a_k / k! E_(n-k) (the Dyson series:
Blanes, Casas, Oteo & Ros, Phys. Rep. 470, 151 (2009)), and the scheme's is
the product of its exponentials exp(h B_m) with h B_m = sum_k h^(k+1) a_k sum_j w_mj c_j^k / k!
(its nodes c_j and weights w_mj).  :func:`leading_term` multiplies the two out in the free
algebra of the letters a_0, a_1, ... (each a_k weighs h^(k+1)) and returns C as words with
coefficients: for ``midpoint`` C = -a_2/24 + (a_0 a_1 - a_1 a_0)/12 (the Magnus expansion's
third-order terms about the midpoint, ibid.), for ``cfm4`` 15 words of weight 5; the
orders below p+1 are checked to vanish, so the scheme's tables are checked too.

This is an asymptotically correct estimate of the local error in the sense of Auzinger,
Hofstaetter, Koch et al., Int. J. Appl. Comput. Math. (2021),
doi:10.1007/s40819-020-00937-9: ||L_est - L|| = O(h^(p+2)).  Theirs is defect-based,
D(h) = S'(h) u - A(t + h) S(h) u with L ~ h D(h) / (p + 1); the defect of a commutator-free
scheme needs each exponential applied once more, the cost of the step again.  Here the same leading term is formed from H's own values: for H = T + V(x, t),
a_0 u = -i (T + V(t)) u and a_k u = -i (d^k V / dt^k)(t) u (V includes the field's x E(t)),
the derivatives from V at p + 1 points of the step (the interpolating polynomial's).  Each
word is a few products with H; in the length gauge, where every letter but a_0 is diagonal,
the words are nested as a Horner scheme in H (:func:`~tdse.numerics.error_terms.horner_plan`):
2 products for midpoint, 6 for cfm4 (8 with an absorber's masks), against a Chebyshev
exponential's tens of terms (:meth:`LocalError.products`); one a suffix (14 for cfm4) in
the velocity gauge and in the GPU's one-kernel estimate.

An absorber's -i W enters as the letter b = -W (weight h): inside each exponent for the
dense methods, as masks exp(h s_m b / 2) around each for Chebyshev (Strang), whose
splitting adds an h^3 term (:func:`estimator_terms`).  A time-independent H without an
absorber has C = 0 (every word holds a derivative of V).
"""
from __future__ import annotations

import math

import numpy as np

from ..model.field import dipole_field, vector_potential, velocity_gauge
from ..model.grid import points
from ..model.hamiltonian import Operator
from ..model.potential import soft_core, total_many
from . import schemes
from .error_terms import ABSORBER, estimator_terms, horner_plan, leading_term, suffixes

__all__ = ["leading_term", "estimator_terms", "LocalError", "BatchLocalError", "ABSORBER"]


#: steps whose letters a run of fixed steps makes at once (LocalError.letters), within
#: LETTERS_CHUNK_BYTES of values (P N each): a step's letters alone took ~100 us of host
#: time on atom_hhg (N = 500, P = 5), most of it NumPy's per-call cost; the pieces of the
#: estimating stepper are at most a chunk (tdse.numerics.adaptive.PIECE_STEPS): 256 against
#: 64 took the time-error suite's rows x1.07-1.24 against x1.11-1.27 on 2 CPUs
#: (time-error_cpu2_20261130T025850.json, ..._030006_before.json), the laser's x1.37 / 1.45
#: against x1.52 / 1.55 on one H200, atom_hhg's the same (x1.42 / 1.55 against 1.44 /
#: 1.45; time-error_h200x1_20261130T030542.json ... _030640_before.json, alternating)
LETTERS_CHUNK = 256
LETTERS_CHUNK_BYTES = 4 << 20

#: a DVR run's pieces on the host (LocalError.block_steps): its kinetic energy by FFT on the
#: block's columns, whose cost a column grows past ~30 columns (the laser drive, N = 320,
#: 2 CPUs, the estimate's own seconds, min / median of 7: pieces ended at each snapshot (10
#: steps) 64.1 / 75.6 ms; spanning them, 16 steps 57.5 / 63.2, 24 54.3 / 60.4, 31 58.7 /
#: 66.7, 64 146 / 166; ``benchmarks/results/dvr_pieces_cpu2_20261202T1610.txt``)
DVR_BLOCK_STEPS = 24

#: a GPU's block of local errors (LocalError._block_graph) for a run of at most this many
#: pieces is launched without capturing its graph: on one H200 the capture cost the first
#: piece 2-7 ms of host time more than the eager products, each later piece ~1-1.5 ms less
#: (the laser, atom_hhg and the four drives, the same bits: ``block_eager_h200x1_20261130T1732.txt``)
EAGER_PIECES = 2


_TERMS = {}   # (terms, suffixes, plan) by (scheme, absorber), once a process (1.6 ms a run)


def _derivatives(P):
    """M (P x P): the k-th derivative at s = 0 of the polynomial through values at
    s_i = i/(P-1) (i < P) is sum_i M[k, i] f_i (times h^-k for the step h)."""
    s = np.linspace(0.0, 1.0, P)
    V = np.vander(s, P, increasing=True)           # f_i = sum_k c_k s_i^k
    inv = np.linalg.inv(V)                         # c = inv f
    return np.array([math.factorial(k) * inv[k] for k in range(P)])


def _summed(parts):
    """sum_n of [(n, dt^n C_n u)]: the local error's leading terms added."""
    return parts[0][1] if len(parts) == 1 else sum(v for _, v in parts)


class LocalError:
    """The leading terms of a step's local error for ``config`` (module docstring):
    :meth:`vector` L_est u at a step's start, :meth:`norm` its L2 norm (weight dx), for u a
    vector or an N x B block (a norm per column), on NumPy or CuPy (``xp``).  ``masks``:
    the run's method applies an absorber as masks (default: the configured method's
    :attr:`~tdse.numerics.exponentials.Exponential.absorber_masks`)."""

    def __init__(self, config, xp=np, masks=None):
        from ..model.absorber import absorber_profile
        from . import exponentials
        self.config, self.xp = config, xp
        sc = schemes.get(config.propagator.scheme)
        self.order, self.P = sc.order, sc.order + 1
        absorber = None
        if not config.hermitian:
            if masks is None:
                masks = exponentials.get(config.propagator.method).absorber_masks
            absorber = "masks" if masks else "generator"
        if (sc, absorber) not in _TERMS:      # (the scheme's tables in the key: a frozen dataclass)
            t = estimator_terms(sc, absorber)
            _TERMS[sc, absorber] = (t, suffixes(t), horner_plan(t))   # (read only)
        self.terms, self._suffixes, self._plan = _TERMS[sc, absorber]
        self.x = points(config.grid)
        self.W = None if absorber is None else xp.asarray(-absorber_profile(config, self.x))
        self.M = _derivatives(self.P)
        self.diagonal = not velocity_gauge(config.potential.field)
        self._chunk = None         # (dt, j0, letters V, letters A) of the steps from j0 (letters)
        self._molecule = None      # a static molecule's V (letters)
        self._graphs = {}          # a GPU's captured estimates, by the shape of u (_graph)
        self._block_up = None      # a GPU's upload of a block's letters (block)

    @property
    def columns_apart(self) -> bool:
        """Whether :meth:`block`'s row for a step has its bits at any block width (pieces may
        span snapshots: a resumed run's start at its snapshot): on the host in the length
        gauge -- a stencil's sparse product, the DVR's kinetic energy by FFT, not by its GEMM
        (OpenBLAS: a column's bits move with the width)."""
        return self.xp is np and self.diagonal

    @property
    def block_steps(self) -> int:
        """The most steps (columns) :meth:`block` is given at once: DVR_BLOCK_STEPS for the
        DVR on the host (its FFTs' columns), else no bound of its own."""
        return DVR_BLOCK_STEPS if self.xp is np and self.config.grid.stencil == "dvr" else LETTERS_CHUNK

    @staticmethod
    def words(config) -> int:
        """Vectors an estimate for ``config`` holds at once (its suffixes': 5 for midpoint,
        29 for cfm4, 18 and 39 with an absorber's masks)."""
        return len(suffixes(estimator_terms(config.propagator.scheme,
                                             None if config.hermitian else "masks")))

    def products(self) -> int:
        """Products with T + V (the letter a_0) one estimate makes on the host or as a graph
        of products: in the length gauge by :func:`~tdse.numerics.error_terms.horner_plan`,
        else one a suffix that starts with a_0 (as the GPU's one-kernel estimate makes)."""
        if self.diagonal:
            return sum(1 for kind, _ in self._plan[0] if kind == "H")
        return sum(1 for s in self._suffixes if s[0] == 0)

    def letters(self, t, dt, j=None):
        """([V(t), dV/dt, ..., d^p V/dt^p], [A(t), ..., d^p A/dt^p]) at the step's start t
        (host, N each; the second all 0 but in the velocity gauge, where V has A^2/2 and
        the letter a_k is d^k V/dt^k + d^k A/dt^k p): the derivatives of the polynomial
        through V (and A) at p + 1 equally spaced points of the step.  ``j``: t is step j's
        start j dt of a run of fixed steps dt; the letters of LETTERS_CHUNK such steps are
        then made at once (:meth:`_letters_many`) and kept for the steps that follow."""
        if j is not None and t == j * dt:
            c = self._chunk_of(j, dt)
            return c[2][j - c[1]], c[3][j - c[1]]
        V, A = self._letters_many(np.array([t], dtype=np.float64), dt)
        return V[0], A[0]

    @property
    def chunk_steps(self) -> int:
        """The steps of one chunk of :meth:`letters` (LETTERS_CHUNK within LETTERS_CHUNK_BYTES);
        chunks start at its multiples."""
        return max(1, min(LETTERS_CHUNK, LETTERS_CHUNK_BYTES // (8 * self.P * len(self.x))))

    def _chunk_of(self, j, dt):
        """(dt, its first step, letters V (S, P, N), letters A (S, P)) of the chunk holding
        step j, made where it is not the one kept."""
        c = self._chunk
        if c is None or c[0] != dt or not c[1] <= j < c[1] + len(c[2]):
            S = self.chunk_steps
            j0 = j - j % S                 # (a resumed run's chunks are the same steps)
            c = self._chunk = (dt, j0, *self._letters_many(np.arange(j0, j0 + S) * dt, dt))
        return c

    def _rows(self, j0, S, dt, alone=False):
        """(V letters (S, P, N), A letters (S, P)) of the steps j0 .. j0 + S - 1, as
        :meth:`letters` makes them: a slice of one chunk where they lie in one; ``alone``:
        those S made by themselves where the kept chunk is of another dt or steps (an
        adaptive run's dt of n steps: a chunk of LETTERS_CHUNK for each n it took)."""
        c = self._chunk
        if alone and (c is None or c[0] != dt or not c[1] <= j0 < j0 + S <= c[1] + len(c[2])):
            return self._letters_many(np.arange(j0, j0 + S) * dt, dt)
        c = self._chunk_of(j0, dt)
        if j0 + S <= c[1] + len(c[2]):
            return c[2][j0 - c[1]:j0 - c[1] + S], c[3][j0 - c[1]:j0 - c[1] + S]
        rows = [self.letters((j0 + k) * dt, dt, j0 + k) for k in range(S)]
        return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])

    def _letters_many(self, starts, dt):
        """:meth:`letters` at each of the steps' ``starts`` (S,): (S, P, N), (S, P) -- each
        step's values by the same operations as one step alone."""
        pot, P, S = self.config.potential, self.P, len(starts)
        ts = starts[:, None] + (np.arange(P) * dt / (P - 1))[None, :]           # (S, P)
        A = np.zeros((S, P))
        if velocity_gauge(pot.field):
            A = np.asarray(vector_potential(pot.field, ts), dtype=np.float64)
        scale = dt ** -np.arange(1.0, P)

        def derivatives(f):      # f itself, then sum_i M[k, i] f_i dt^-k (a step's own values)
            out = np.empty_like(f)
            out[:, 0] = f[:, 0]
            for k in range(1, P):
                d = self.M[k, 0] * f[:, 0]
                for i in range(1, P):
                    d += self.M[k, i] * f[:, i]
                out[:, k] = d * scale[k - 1]
            return out
        if not pot.molecule_moves:
            # V = V_mol(x) + x E(t) + A(t)^2 / 2: the molecule's V once, and the time
            # derivatives of the two scalars E and A^2/2 (S x P values, not S x P x N; the
            # molecule's part of V's differences is 0 but for its rounding)
            if self._molecule is None:
                self._molecule = np.asarray(soft_core(pot, self.x, 0.0), dtype=np.float64)
            E = dipole_field(pot.field, ts) if pot.field is not None else np.zeros((S, P))
            vals = derivatives(np.asarray(E, dtype=np.float64))[..., None] * self.x
            vals[:, 0] += self._molecule
            if A.any():
                vals += derivatives(0.5 * A * A)[..., None]
        else:
            vals = np.empty((S, P, len(self.x)))
            total_many(pot, self.x, ts.ravel(), out=vals.reshape(S * P, -1))    # (V once a time)
            vals += 0.5 * (A * A)[..., None]
            vals = derivatives(vals)
        return vals, derivatives(A[..., None])[..., 0]

    def parts(self, u, t, dt):
        """[(n, dt^n C_n u)] at step start t (u a vector or N x B block on ``xp``): the
        orders apart, so that another step h scales each by (h/dt)^n."""
        return self._parts(u, t, dt, *self.letters(t, dt))

    def _graphs_take(self, A) -> bool:
        """Whether the estimate runs as a CUDA graph (:meth:`_graph`): on a GPU, in the length
        gauge (no A p letter), with ``run.graphs`` on."""
        return self.xp is not np and not any(A) and self.config.run.graphs

    def _parts(self, u, t, dt, host, A):
        xp = self.xp
        if self._graphs_take(A):
            return [(n, S * dt ** n) for n, S in self._graph(u, host, dt)[0]]
        H = Operator(self.config, 1.0, host[0], xp, a=A[0])     # (it takes V from the host)
        zero = np.zeros(self.config.grid.n)
        p = {k: Operator(self.config, 0.0, zero, xp, a=A[k]) for k in range(1, self.P) if A[k]}
        der = [xp.asarray(d) for d in host]
        if u.ndim == 2:
            der = [d[:, None] for d in der]
        W = None if self.W is None else (self.W if u.ndim == 1 else self.W[:, None])
        return self._apply(u, dt, H, lambda k, X: der[k] * X + p[k](X) if k in p else der[k] * X, W,
                           diagonal=not p)

    def _apply(self, u, dt, H, letter, W, diagonal=True):
        """[(n, dt^n C_n u)] with a_0 X = -i H(X), a_k X = -i letter(k, X) (k >= 1), b X =
        W X (dt None: C_n u, dt^n not applied).  ``diagonal`` (the length gauge: every letter
        but a_0 a multiplication): by :func:`~tdse.numerics.error_terms.horner_plan`, the
        factors -i carried as scalars; else every suffix's product, then each order's sum."""
        if not diagonal:
            vec = {(): u}
            for s in self._suffixes:
                k, rest = s[0], vec[s[1:]]
                if k == 0:
                    vec[s] = -1j * H(rest)
                elif k == ABSORBER:
                    vec[s] = W * rest
                else:
                    vec[s] = -1j * letter(k, rest)
            sums = [(n, sum(c * vec[w] for w, c in C.items())) for n, C in self.terms.items()]
            return sums if dt is None else [(n, S * dt ** n) for n, S in sums]
        ops, outs = self._plan
        vec, f = [u], [1.0]          # vec_i's value is f_i vec[i]
        for kind, arg in ops:
            if kind == "H":
                vec.append(H(vec[arg]))
                f.append(-1j * f[arg])
                continue
            acc = None
            for c, d, i in arg:
                X, c = vec[i], c * f[i]
                for k in d:
                    if k == ABSORBER:
                        X = W * X
                    else:
                        X, c = letter(k, X), -1j * c
                acc = c * X if acc is None else acc + c * X
            vec.append(acc)
            f.append(1.0)
        sums = [(n, (s * f[i]) * vec[i]) for n, s, i in outs]
        return sums if dt is None else [(n, S * dt ** n) for n, S in sums]

    def _graph(self, u, host, dt, j=None):
        """On a GPU: ([(n, C_n u)] (dt^n not applied), sum_n dt^n C_n u or None) by one CUDA
        graph launch, one graph for each shape of u (a vector, an N x B block): u and the
        letters (:meth:`letters`, with the orders' dt^n: :meth:`_letters_in`; ``j`` the
        step of a run of fixed steps) are read from the device buffers it was captured
        on.  A vector with the stencils' bands or the DVR's dense T: one cooperative kernel
        (:data:`tdse.backends.cupy.words.WORDS`) makes every word and the sum.  Else the
        words' products as :meth:`parts` makes them, H = T + V applied as the kinetic
        product (the stencils' band kernel of
        :class:`~tdse.model.hamiltonian.BlockOperator`, the DVR's FFT of
        :class:`~tdse.model.hamiltonian.Operator`) plus V u, each a kernel (no sum).
        Launched, an estimate was ~200 small kernels, 10.6x a cfm4 graph step on one H200
        at N = 500 (``time-error_h200x1_20261128T134202.json``); as a graph of them 2.2x
        (``time-error_h200x1_20261129T055801.json``): the graph's replay alone 371 us
        against the step's 103 us; the one kernel's 59 us (``estimate_parts_h200x1_
        20261129T0704.txt``, ``..._0722.txt``), the run x1.62
        (``time-error_h200x1_20261129T072454.json``)."""
        from mgemm.arrays import PinnedUpload

        from ..model.hamiltonian import BlockOperator
        from .graphs import RUN_AHEAD, copy_in
        grid = self.config.grid
        cp, n = self.xp, self.config.grid.n
        g = self._graphs.get(u.shape)
        if g is None:
            block = BlockOperator(grid, 1.0, cp.zeros((n, 1)), cp)
            one = (u.ndim == 1 and (block.bands is not None or block.T is not None)
                   and len(self.terms) <= 4)          # (the kernel sums up to 4 orders)
            g = self._graphs[u.shape] = {
                "u": cp.zeros(u.shape, np.complex128), "D": None, "graph": None, "out": None,
                "up": PinnedUpload(cp, ring=RUN_AHEAD), "pool": cp.cuda.MemoryPool(),
                # the graph of products' T alone (none for the one kernel): _body's
                "T": None if one else _products_T(self.config, block, cp),
                "words": self._words(block) if one else None}
        self._letters_in(g, host, dt, j)
        copy_in(cp, g["u"], u)
        if g["graph"] is None:
            g["graph"] = self._capture(g)
        g["graph"].launch()
        return g["out"], g["total"]

    def _letters_in(self, g, host, dt, j=None):
        """The letters (and the orders' dt^n) into the device buffer ``g["D"]`` the graph
        reads (one buffer for the graph's life): a device copy from the letters of
        :meth:`letters`' chunk of fixed steps where ``j`` is given -- ``host`` is then step
        ``j``'s row of it (:meth:`vector` passes ``j`` only where ``t == j dt``, as
        :meth:`letters` takes its chunk; the chunk uploaded once, at its first step:
        :meth:`_chunk_on`) --, else one pinned upload and a device copy.  (Per step, the pinned upload of the letters with the orders
        appended held the loop's host ~30 us a step on an H200's host.)"""
        cp = self.xp
        orders = self._orders(dt)
        size = host.size + orders.size
        if g["D"] is None:
            g["D"], g["graph"] = cp.empty(size), None
        c = self._chunk
        if j is not None:                    # host is row j - c[1] of letters()' chunk c
            src = self._chunk_on(g, c, orders).data + (j - c[1]) * size * 8
        else:
            g["up"].put(np.concatenate([host.ravel(), orders]))
            src = g["up"].dev.data
        g["D"].data.copy_from_device_async(src, size * 8)

    def _orders(self, dt):
        """[dt^n for each order n of the terms] (host), made once a step size."""
        if getattr(self, "_orders_dt", (None,))[0] != dt:     # (set at the first call)
            self._orders_dt = (dt, np.array([float(dt) ** m for m in self.terms]))
        return self._orders_dt[1]

    def _chunk_on(self, g, c, orders):
        """The chunk ``c`` of :meth:`letters` on the device, a row a step (its letters, then
        the orders): uploaded once (a pinned upload of its own)."""
        if g.get("chunk") is not c:
            from mgemm.arrays import PinnedUpload
            S = len(c[2])
            rows = np.empty((S, c[2][0].size + orders.size))
            rows[:, :-orders.size] = c[2].reshape(S, -1)
            rows[:, -orders.size:] = orders
            up = g.setdefault("up_chunk", PinnedUpload(self.xp, ring=2))
            up.put(rows.ravel())
            g["chunk"] = c
        return g["up_chunk"].dev

    def _capture(self, g):
        from .graphs import capture
        cp = self.xp
        if g["words"] is None:
            return capture(cp, lambda: self._body(g), pool=g["pool"])
        try:
            return capture(cp, lambda: self._words_body(g))
        except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError):
            if not g["words"]["coop"]:
                raise
            g["words"]["coop"] = False      # this CUDA cannot capture a cooperative launch
            return capture(cp, lambda: self._words_body(g))

    def _words(self, block) -> dict:
        """The one-kernel estimate's buffers (:meth:`_graph`; :func:`tdse.backends.cupy.words.buffers`)."""
        from ..backends.cupy.words import buffers
        return buffers(self.xp, self._suffixes, self.terms, block, self.config.grid.n, self.W)

    def _words_body(self, g):
        """The captured one-kernel estimate (:meth:`_graph`): u into the words' first row,
        then :data:`tdse.backends.cupy.words.WORDS`."""
        from ..backends.cupy.words import launch
        from .graphs import copy_in
        w = g["words"]
        copy_in(self.xp, w["vec"][0], g["u"])
        launch(self.xp, w, g["D"], self.config.grid.n, self.P)
        g["out"] = [(m, w["out"][r]) for r, m in enumerate(self.terms)]
        g["total"] = w["out"][w["R"]]

    def _body(self, g):
        """The captured estimate (:meth:`_graph`): its sums into ``g["out"]``."""
        from .graphs import dgemm_into
        u, n = g["u"], self.config.grid.n
        shape = g.get("letters", (self.P, n))         # (a batch's P x N x B)
        D = g["D"][:math.prod(shape)].reshape(shape)
        der = [D[k] if D[k].ndim == u.ndim else D[k][:, None] for k in range(self.P)]
        W = None if self.W is None else (self.W if self.W.ndim == u.ndim else self.W[:, None])

        def H(X):
            T = g["T"]
            if isinstance(T, Operator):              # the DVR beyond the GEMM's N: T X (+ 0 X) by FFT
                return T(X) + der[0] * X
            if T.T is not None:                      # the DVR's dense T: one DGEMM
                X = self.xp.ascontiguousarray(X)
                kin, k = self.xp.empty_like(X), T.k
                dgemm_into(self.xp, T.T, X, kin)
            else:
                kin, k = T._kinetic(X)
            return (kin * k if k != 1.0 else kin) + der[0] * X
        g["out"] = self._apply(u, None, H, lambda k, X: der[k] * X, W)
        g["total"] = None

    def vector(self, u, t, dt, j=None, keep=True):
        """sum_n dt^n C_n u at step start t (u a vector or N x B block on ``xp``; ``j``: t is
        step j's start j dt, :meth:`letters`).  ``keep=False``: the caller reads it before
        the next estimate is queued (on a GPU it may be the one-kernel estimate's own
        buffer, not a copy)."""
        row = j if j is not None and t == j * dt else None       # (letters' chunk row)
        host, A = self.letters(t, dt, row)
        if self._graphs_take(A):
            parts, total = self._graph(u, host, dt, row)
            if total is not None:                  # the one-kernel estimate's own sum
                from .graphs import copy_out
                return copy_out(self.xp, total) if keep else total
            parts = [(n, S * dt ** n) for n, S in parts]
        else:
            parts = self._parts(u, t, dt, host, A)
        return _summed(parts)

    def block(self, U, j0, dt, alone=False):
        """The local errors of the fixed steps dt j0, j0 + 1, ..., j0 + S - 1 of a run at once:
        row k of the S x N result is :meth:`vector`'s sum for step j0 + k from psi(t_(j0+k)),
        row k of ``U`` (S x N, on ``xp``).  The steps are the columns of one N x S block, each
        with its own letters (:meth:`letters`' chunk of steps; one step alone: :meth:`vector`): every
        product with H is one product of the block (a GEMM for the DVR, one band kernel or
        sparse product for a stencil), so an estimate costs a step a few elementwise passes
        over its column, not a launch or a NumPy call per word.  ``alone``: the letters made
        for these steps only where the kept chunk is not theirs (:meth:`_rows`)."""
        xp, S = self.xp, U.shape[0]
        if S == 1 and not self.columns_apart:   # (one step: a block's set-up is not worth it,
            return self.vector(U[0], j0 * dt, dt, j0)[None]   # unless its bits must be a block's)
        vals, A = self._rows(j0, S, dt, alone)                              # (S, P, N), (S, P)
        velocity = bool(np.any(A))
        if self._graphs_take(A.ravel()):
            return self._block_graph(U, vals, dt)
        der = np.ascontiguousarray(vals.transpose(1, 2, 0))                 # (P, N, S)
        if xp is not np:          # one pinned upload, queued (a pageable one waits for the stream)
            from mgemm.arrays import PinnedUpload
            if self._block_up is None:
                self._block_up = PinnedUpload(xp, ring=2)
            self._block_up.put(der.ravel())
            der = self._block_up.dev[:der.size].reshape(der.shape)
        parts = self._columns(xp.ascontiguousarray(U.T), dt, der, list(A.T) if velocity else None,
                              None if self.W is None else self.W[:, None], self.columns_apart)
        return xp.ascontiguousarray(_summed(parts).T)

    def _columns(self, u, dt, der, A, W, by_fft=False):
        """:meth:`_apply` on an N x B block whose columns have their own letters: ``der`` the
        d^k V / dt^k (each N x B), ``A`` the velocity gauge's d^k A / dt^k (each (B,), host)
        or None (the length gauge), ``W`` the absorber's -W (N x B or N x 1) or None; H = T +
        V as one :class:`~tdse.model.hamiltonian.BlockOperator` (a scan's members, a run's
        steps: :meth:`block`, whose ``by_fft`` keeps a column's bits at any width)."""
        from ..model.hamiltonian import BlockOperator
        from ..model.momentum import BlockMomentum
        xp, grid = self.xp, self.config.grid
        H = BlockOperator(grid, 1.0, der[0], xp, a=None if A is None else A[0], by_fft=by_fft)
        if A is None:
            return self._apply(u, dt, H, lambda k, X: der[k] * X, W)
        p = BlockMomentum(grid, xp)
        a = [xp.asarray(v)[None, :] for v in A]
        return self._apply(u, dt, H, lambda k, X: der[k] * X + a[k] * p(X), W, diagonal=False)

    def _block_graph(self, U, vals, dt):
        """:meth:`block` on a GPU in the length gauge: the words' products as one CUDA graph
        (:meth:`_graph`'s graph of products: the DVR's T by FFT, a stencil's band kernel) on
        an N x S' block, S' = :attr:`chunk_steps` (the most a piece holds: one graph a run,
        where a graph for each S, captured in the run, had cost atom_hhg's 1000 steps with a
        snapshot every 50 ~0.15 s on one H200; the columns past S hold stale values): a
        piece's estimates one graph launch, its letters ``vals`` (S, P, N) one pinned upload
        and one copy into the graph's (P, N, S') buffer."""
        from mgemm.arrays import PinnedUpload

        from ..model.hamiltonian import BlockOperator
        cp, grid, S = self.xp, self.config.grid, U.shape[0]
        n, P, Sb = grid.n, self.P, max(S, self.chunk_steps)
        g = self._graphs.get(("block", Sb))
        if g is None:
            g = self._graphs[("block", Sb)] = {
                "u": cp.zeros((n, Sb), np.complex128), "letters": (P, n, Sb),
                "D": cp.zeros(P * n * Sb), "graph": None, "out": None, "words": None,
                "pool": cp.cuda.MemoryPool(), "up": PinnedUpload(cp, ring=2),
                "T": _products_T(self.config, BlockOperator(grid, 1.0, cp.zeros((n, 1)), cp), cp)}
        g["up"].put(vals.ravel())
        src = g["up"].dev[:vals.size].reshape(vals.shape)
        g["D"].reshape(P, n, Sb)[:, :, :S] = src.transpose(1, 2, 0)
        g["u"][:, :S] = U.T
        if g["graph"] is None and self._eager():
            self._body(g)                   # (the products launched: no graph for a short run)
        else:
            if g["graph"] is None:
                g["graph"] = self._capture(g)
            g["graph"].launch()
        L = None
        for m, C in g["out"]:
            term = (dt ** m) * C[:, :S]
            L = term if L is None else L + term
        return cp.ascontiguousarray(L.T)

    def _eager(self) -> bool:
        """Whether :meth:`_block_graph` launches the products without a graph: a run of fixed
        steps whose estimate is at most :data:`EAGER_PIECES` pieces (decided by the run's
        length alone, so a resumed run decides alike; the bits are the graph's)."""
        T = self.config.time
        return T.tolerance is None and -(-T.steps // self.chunk_steps) <= EAGER_PIECES

    def norm(self, u, t, dt):
        """||sum_n dt^n C_n u|| (L2, weight dx): a float, or (B,) for a block."""
        L = self.vector(u, t, dt)
        xp = self.xp
        n = xp.sqrt(xp.sum(xp.abs(L) ** 2, axis=0) * self.config.grid.dx)
        return float(n) if L.ndim == 1 else n


class BatchLocalError(LocalError):
    """:class:`LocalError` for a scan's batch: an N x B block whose columns are members with
    their own potentials, fields and absorbers (:class:`tdse.numerics.stepper.BatchStepper`'s
    ``potential``, a :class:`tdse.model.potential.BatchPotential`, and ``W``, N x B or None).
    The same words; the letters member by member: a_k's d^k V / dt^k (N x B, from V at the
    step's p + 1 points on the block's device) and, in the velocity gauge, A(t)'s per member
    (B,) times p; H = T + V as the block's :class:`~tdse.model.hamiltonian.BlockOperator`.
    An absorber as masks (the batch's Chebyshev exponentials apply it so).  On a GPU in the
    length gauge the words' products are one CUDA graph (:meth:`_graphs_take`), the letters
    made before it by BatchPotential's kernels; in the velocity gauge launched from Python."""

    def __init__(self, configs, potential, W, xp=np):
        ref = next((c for c in configs if not c.hermitian), configs[0])
        super().__init__(ref, xp, masks=True)
        self.batch = potential
        self.diagonal = not potential.velocity
        self.W = None if W is None else xp.asarray(-np.asarray(W, dtype=np.float64))

    def letters(self, t, dt, j=None):
        """([V_b(t), dV_b/dt, ...] each N x B on the device, [A_b(t), dA_b/dt, ...] each (B,)
        on the host, or None in the length gauge)."""
        pot, P, xp = self.batch, self.P, self.xp
        ts = t + dt * np.arange(P) / (P - 1)
        # row k: the weights of V's values that make its k-th derivative at t (row 0: V(t))
        w = np.vstack([np.eye(P)[0]] + [self.M[k] * dt ** -k for k in range(1, P)])
        der = pot.weighted(ts, w)              # (on a GPU: one upload, a kernel a letter)
        if not pot.velocity:
            return der, None
        A = np.array([pot.vector(float(s)) for s in ts])                   # (P, B)
        q = w @ (0.5 * A * A)                  # A^2/2's derivatives, in V
        return [d + xp.asarray(qk)[None, :] for d, qk in zip(der, q)], list(w @ A)

    def _graphs_take(self, A) -> bool:
        """On a GPU in the length gauge with ``run.graphs``: the words' products as one CUDA
        graph (:meth:`LocalError._graph`'s graph of products, the DVR's T by FFT), its letters
        copied on the device into the buffer it reads."""
        return self.xp is not np and A is None and self.config.run.graphs

    def _letters_in(self, g, der, dt, j=None):
        if g["D"] is None:
            g["letters"] = (self.P,) + der[0].shape
            g["D"] = self.xp.zeros(g["letters"])
        for k, d in enumerate(der):
            g["D"][k] = d

    def _parts(self, u, t, dt, der, A):
        return self._columns(u, dt, der, A, self.W)


def _products_T(config, block, cp):
    """The T of a GPU estimate's graph of products: ``block`` (a stencil's band kernel, the DVR's
    T by :func:`~tdse.numerics.graphs.dgemm_into`), beyond the GEMM's N the DVR by FFT (at any N
    that had cost the laser's capture cuFFT's start: 19 -> 6 ms, ``laser_cost_ab_h200x1_20261130T1552.txt``)."""
    if config.grid.stencil == "dvr" and block.T is None:
        return Operator(config, 1.0, np.zeros(config.grid.n), cp)
    return block
