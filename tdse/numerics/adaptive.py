"""Steps that carry their own error, and adaptive steps (``time.tolerance``).

:class:`EstimatingStepper` steps psi over the run's grid of dt as a
:class:`~tdse.numerics.stepper.Stepper` does, and with each step estimates its local error
L_j (:class:`tdse.numerics.local_error.LocalError`) and carries the global error
e_(j+1) = S_j e_j + L_j (the linearised error, the local errors each propagated to t:
Kormann, Holmgren & Karlsson, Uppsala TR 2009-021) by a cheaper step
(:mod:`tdse.numerics.carrier`: a split step in the length gauge, a piece of them one kernel
on a GPU; else :func:`transport_config`'s midpoint Chebyshev step).  The run states
SAFETY ||e|| (:mod:`tdse.run.timeerror`).

With ``time.tolerance`` (``control``) each dt is made of n = 1, 2, 3, 4, 6, 8, 12, ...
equal steps h = dt/n, n chosen at the start of each dt from the local error's leading terms, which
are known before the step is taken (their orders apart: h^(p+1), and h^3 for an
absorber's splitting): the largest h (dt first) with ||L(h)|| <= CHOICE tau h, where
tau = tolerance / (SAFETY t_end) is the error per unit time that keeps
SAFETY sum_j ||L_j|| (so the stated SAFETY ||e||) within the tolerance at t_end (error per
unit step: Hairer, Norsett & Wanner, Solving ODEs I, Sec. II.4).  Within a dt each step's
estimate is made anyway (it is carried); one over REJECT tau h rejects the dt's steps
taken so far: psi and e go back to the dt's start and it is taken again with twice the
steps.  n may fall to about half at each new dt.  Every output time is a multiple of dt, so
every one is landed on; h below ``time.dt_min`` stops the run with one line
(:class:`StepTooSmall`).  The first h tried is dt (the largest).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time

import numpy as np

from mgemm.arrays import to_host

from ..errors import ConfigError
from .carrier import carrier
from .local_error import LETTERS_CHUNK, LocalError
from .propagators import Steps

__all__ = ["EstimatingStepper", "StepTooSmall", "transport_config", "TRANSPORT_TOLERANCE",
           "SAFETY", "CHOICE", "REJECT"]

#: the stated error is SAFETY x the carried one (tdse.run.timeerror)
SAFETY = 2.0
#: a step is chosen where its estimate is at most CHOICE x its share of the tolerance ...
CHOICE = 0.8
#: ... and the dt's steps are taken again where one's estimate is over REJECT x its share
REJECT = 1.5
#: the tolerance of the exponentials that carry e (it needs a few digits)
TRANSPORT_TOLERANCE = 1e-6


#: the steps :meth:`EstimatingStepper.steps` takes at once (their local errors kept until e
#: is carried over them), within PIECE_BYTES of local errors: a chunk of the letters
#: (:data:`tdse.numerics.local_error.LETTERS_CHUNK`, where it is measured); 64 MB of the
#: host's or the device's memory, a choice
PIECE_STEPS = LETTERS_CHUNK
PIECE_BYTES = 64 << 20


def _add_to(L, Y):
    """Y += L in place (Y the carrier's e where it lives, after a step)."""
    Y += L


def _copy_to(f, Y):
    """f(a copy of Y): e after a step, which the carrier goes on changing in place."""
    f(Y.copy())


class DeferredE:
    """e after a step whose piece is not yet made (:meth:`EstimatingStepper.deferred_e`): a
    snapshot's e, read on the host once its piece is made (:meth:`result` makes it where
    it is still pending) -- so that a piece spans the snapshots between its ends."""

    def __init__(self, stepper):
        self.stepper, self.copy = stepper, None

    def set(self, e):
        """e at the step, on the device: its copy to the host queued (no wait)."""
        from mgemm.arrays import HostCopy
        self.copy = HostCopy({"e": e})

    def ready(self) -> bool:
        """Whether e is on the host (no wait)."""
        return self.copy is not None and self.copy.done()

    def result(self):
        """e on the host (its piece made first where it is pending)."""
        if self.copy is None:
            self.stepper.e              # noqa: B018 -- the pending piece is made on reading e
        return self.copy.result()["e"]


class StepTooSmall(ConfigError):
    """Adaptive steps would need a step under time.dt_min: the input's time.tolerance cannot
    be met above it (one line; the CLI exits with code 2)."""


def transport_config(config):
    """The step that carries e: the run's at the same h by the midpoint scheme, its
    exponential by Chebyshev (matrix-free: a dense run's carry had cost another dense
    exponent a step, x1.65 the run on one H200 at N = 8192) at :data:`TRANSPORT_TOLERANCE`
    (or the run's, if looser): e is carried with an O(h^2) relative error, which moved the
    stated error by a few per cent where measured."""
    from .exponentials import Chebyshev
    pr = config.propagator
    return dataclasses.replace(config, propagator=dataclasses.replace(
        pr, scheme="midpoint", method=Chebyshev.name, time_error="none", error_window=0,
        operator=False, tolerance=max(pr.tolerance, TRANSPORT_TOLERANCE)))


def _at_step(config, h):
    t = config.time
    return dataclasses.replace(config, time=dataclasses.replace(
        t, dt=h, t_end=t.t_end, tolerance=None, dt_min=None))


class EstimatingStepper(Steps):
    """Steps psi by dt (``step(psi, j)``), carrying its error ``e`` (module docstring);
    ``make(config)`` builds a :class:`~tdse.numerics.stepper.Stepper` for a config (the
    run plan's :meth:`~tdse.run.plan.RunPlan.stepper`; a scan's batch: a
    :class:`~tdse.numerics.stepper.BatchStepper` for its members at that config's time and
    propagator, with ``local`` a :class:`~tdse.numerics.local_error.BatchLocalError`).  ``control``: adaptive steps
    (``time.tolerance``).  ``e`` starts as None (zeros at the first step) and may be set
    (a resumed run's); ``n`` the steps a dt now."""

    def __init__(self, config, make, xp=np, control=False, local=None):
        self.config, self.make, self.xp, self.control = config, make, xp, control
        self.local = LocalError(config, xp) if local is None else local
        self.base = make(_at_step(config, config.time.dt) if control else config)
        self.scheme, self.static = self.base.scheme, self.base.static
        self.method = getattr(self.base, "method", None)       # (a batch has none)
        self._steps, self._carry = {1: self.base}, {}
        self.n, self._e = 1, None
        self._pending = None           # [first, end) steps whose local errors are not yet made
        self._deferred = []            # (step, DeferredE) within the pending piece
        self._first = None             # the dt's first local error when _choose made it
        self._next = None              # the next dt's (j, psi, n, parts, inner products), made ahead
        T = config.time
        self.budget = T.tolerance / SAFETY if control else math.inf
        self.tau = math.inf
        self.n_max = max(1, int(math.floor(T.dt / T.dt_min * (1 + 1e-9)))) if control else 1
        # the steps a dt may take: 1, 2, 3, 4, 6, 8, 12, ... (at most 1.5x more than needed,
        # few distinct h: each needs its own steppers, ~8 ms to make one)
        self.ladder = sorted({min(self.n_max, m * 2 ** k) for k in range(64) for m in (2, 3)
                              if m * 2 ** k <= 2 * self.n_max} | {1, self.n_max})
        self.seconds = 0.0             # the estimates and the carrying (host clock)
        self.substeps, self.rejected, self.h_min = 0, 0, T.dt
        self.context_switch_seconds = 0.0
        self._U = None                 # psi before each step of a piece or a dt (_psi_rows)
        self._rows = []                # its rows' views

    # the loop's and the driver's view of a stepper ------------------------------------
    @property
    def exponentials(self) -> int:
        return sum(s.exponentials for s in self._steps.values())

    @property
    def cheb_terms(self) -> int:
        return sum(s.cheb_terms for s in self._steps.values())

    def step_operator(self, Ut, j):
        """U(t) by the run's own steps (fixed steps only: the config refuses U(t) with
        time.tolerance); its error is not estimated."""
        if self.control:
            raise ValueError("U(t) is not stepped with time.tolerance (adaptive steps)")
        return self.base.step_operator(Ut, j)

    # -------------------------------------------------------------------------------------
    def _stepper(self, n):
        if n not in self._steps:
            self._steps[n] = self.make(_at_step(self.config, self.config.time.dt / n))
        return self._steps[n]

    @property
    def carried_by(self) -> str:
        """What carries e (the run file's ``time_error`` attribute)."""
        c = self._carrier(1)
        return c.description if hasattr(c, "description") else \
            f"midpoint, tolerance {c.config.propagator.tolerance:g}"

    def _carried(self, n, e, k0, Ls, taps=None):
        """e carried by the carrier of dt/n over the steps k0, k0 + 1, ... (one a row of
        ``Ls``), each local error L_k added after its step (a tap; on a GPU's split carrier
        the piece in one kernel, :meth:`~tdse.numerics.carrier.SplitCarrier.carry`, given
        e at the steps of ``taps``, {step: [callable]})."""
        c = self._carrier(n)
        if getattr(c, "one_launch", False):
            return c.carry(e, k0, Ls, taps)
        own = {k0 + i + 1: [functools.partial(_add_to, Ls[i])] for i in range(len(Ls))}
        for k, fs in (taps or {}).items():       # e as it is after step k (it goes on in place)
            own.setdefault(k, []).extend(functools.partial(_copy_to, f) for f in fs)
        return c.advance(e, k0, k0 + len(Ls), taps=own)

    def _carrier(self, n):
        if n not in self._carry:
            self._carry[n] = carrier(self.make(transport_config(_at_step(self.config, self.config.time.dt / n))),
                                     self.xp)
        return self._carry[n]

    def _norm(self, parts, scale=1.0):
        """||sum_n scale^n part_n|| (L2, weight dx) of :meth:`LocalError.parts`; of a block
        (a scan's batch) its largest column's: the members share their steps."""
        L = sum((scale ** n) * v for n, v in parts)
        return float(self.xp.sqrt(self.xp.sum(self.xp.abs(L) ** 2, axis=0) * self.config.grid.dx).max())

    def _gram(self, e, parts):
        """(the inner products of e and the parts on the device, m+1 x m+1 x B, not yet
        read): the norms of e and of every candidate step's scaled sum follow from them on
        the host (:meth:`_sizes`), one read for the dt's choice where each candidate's norm
        had been a wait for the device (4-5 a dt on one H200, ``adapt_prof_h200x1_20261130T0402.txt``)."""
        xp, vs = self.xp, [e] + [v for _, v in parts]
        if e.ndim == 1:
            P = xp.stack(vs)
            return (P.conj() @ P.T).real[None]
        m = len(vs)                        # (a batch: column by column, no N x B x m copy)
        G = [[None] * m for _ in range(m)]
        for a in range(m):
            for b in range(a, m):
                G[a][b] = G[b][a] = xp.sum((vs[a].conj() * vs[b]).real, axis=0)
        return xp.stack([xp.stack(r) for r in G]).transpose(2, 0, 1)

    def _sizes(self, G, orders):
        """(||e||, the function scale -> ||sum_n scale^n part_n||) from :meth:`_gram`'s
        products on the host, the largest column's (a batch's members share their steps);
        ||x||^2 = sum_ab s^(n_a + n_b) Re <p_a, p_b>: rounding ~1e-16 of (sum_n ||p_n||)^2,
        a choice's margin (CHOICE against REJECT) far above it."""
        dx = self.config.grid.dx
        G = np.asarray(G)
        o = np.asarray(orders, dtype=float)

        def size(scale):
            w = scale ** o
            return math.sqrt(max(float(np.max(np.einsum("a,bac,c->b", w, G[:, 1:, 1:], w))), 0.0) * dx)
        return math.sqrt(max(float(G[:, 0, 0].max()), 0.0) * dx), size

    @property
    def e(self):
        """The carried error at the last step taken (a piece whose local errors are still
        to be made, :meth:`steps`, is made first)."""
        if self._pending is not None:
            self._make_piece()
        return self._e

    @e.setter
    def e(self, value):
        self._pending, self._e, self._deferred, self._next = None, value, [], None

    def deferred_e(self, step):
        """A :class:`DeferredE` of e after ``step``, the end of the pending piece, which
        then goes on past it (a GPU's split carrier, one kernel a piece: there a piece ended
        at every snapshot had cost the laser drive's 500 steps, a snapshot every 10, ~0.7 ms
        of the host's time a piece, ``trace_probe_h200x1_20261130T0250.txt``; the run's
        cost with the estimate moved within the calls' noise, x1.63 against x1.67 one call,
        ``time-error_h200x1_20261130T024909.json``; on the host, where a block's rows do not
        depend on its width, :attr:`LocalError.columns_apart`: on 2 CPUs the abrupt drive's
        estimate x1.27-1.29 -> 1.18-1.21, the fast one's x1.33-1.35 -> 1.26-1.29,
        ``piece_span_cpu2_20261130T1600.txt``); None where e is at hand or neither holds
        (read :attr:`e` then)."""
        p = self._pending
        if p is None or p[1] != step or not (self.local.columns_apart or getattr(
                self._carrier(1), "one_launch", False)):
            return None
        d = DeferredE(self)
        self._deferred.append((step, d))
        return d

    def steps(self, X, j0, j1, taps=None):
        """``X`` stepped from ``j0`` to ``j1`` with e carried (fixed steps; adaptive ones a
        dt at a time, :meth:`step`), in pieces of at most :data:`PIECE_STEPS` (a run's psi:
        one chunk of the letters, :attr:`LocalError.chunk_steps`, aligned to it): psi by
        the run's own steps (on a GPU its graphs' launches, as a run without the estimate),
        psi before each step tapped into a block (:func:`~tdse.numerics.propagators.tap`);
        the piece's local errors are made at once from it (:meth:`LocalError.block`) and e
        carried over it (each L_k added after its step k, a tap) when the piece is whole
        or e is read (:attr:`e`: a snapshot's), so that a piece spans the calls of the
        save points between (a run with H(t)'s populations every step and a snapshot every
        10 steps: pieces of 10 steps, not of one).  A scan's batch: each local error from a
        callable tap, a step at a time, e carried at the call's end.  atom_hhg on one
        H200: x3.4-3.7 the run without the estimate a step at a time, x2.8 in pieces with
        an estimate a step (``time-error_h200x1_20261129T201452.json``, ``..._201420.json``),
        x2.2 with a piece's estimates one block (``..._214551.json``); e on a stream of its
        own beside psi's next piece gained nothing in runs (the graphs' one-kernel
        exponentials take the whole device; ``estimate_split_h200x1_20261129T2145.txt``).
        The same psi as :meth:`step`'s; e to rounding (a block's products round otherwise
        than a vector's)."""
        if self.control:
            return super().steps(X, j0, j1, taps)
        if self._e is None:
            self._e = self.xp.zeros_like(X)
        most = self._block_most(X)
        if not most:
            return self._steps_each(X, j0, j1, taps)
        if self._pending is not None and self._pending[1] != j0:
            self._make_piece()
        j = j0
        while j < j1:
            if self._pending is None:
                self._pending = [j, j]
            start = self._pending[0]
            end = min(j1, (start // most + 1) * most)
            own = {k: list(v) for k, v in (taps or {}).items() if j < k <= end}
            U = self._psi_rows(X)
            U[j - start] = X               # psi before each step kept
            rows = self._rows
            for k in range(j + 1, end):
                own.setdefault(k, []).append(rows[k - start])
            X = self.base.advance(X, j, end, taps=own)
            self._pending[1] = end
            self.substeps += end - j
            if end % most == 0:            # a whole chunk: its estimates now
                self._make_piece()
            j = end
        return X

    def _make_piece(self):
        """The pending piece's local errors as one block, then e carried over it."""
        start, end = self._pending
        self._pending = None
        dt = self.config.time.dt
        t0 = time.perf_counter()
        Ls = self.local.block(self._U[:end - start], start, dt)
        taps = {k: [d.set] for k, d in self._deferred}
        self._deferred = []
        self._e = self._carried(1, self._e, start, Ls, taps)
        self.seconds += time.perf_counter() - t0

    def _steps_each(self, X, j0, j1, taps=None):
        """:meth:`steps` for a scan's batch: each step's local error from a callable tap."""
        dt = self.config.time.dt
        piece = max(1, min(PIECE_STEPS, PIECE_BYTES // (16 * X.size)))
        j = j0
        while j < j1:
            end = min(j1, j + piece)
            own = {k: list(v) for k, v in (taps or {}).items() if j < k <= end}
            t0 = time.perf_counter()
            Ls = [self.local.vector(X, j * dt, dt, j)]
            self.seconds += time.perf_counter() - t0

            def grab(k):
                def made(Y):              # psi(t_k), before step k
                    t = time.perf_counter()
                    Ls.append(self.local.vector(Y, k * dt, dt, k))
                    self.seconds += time.perf_counter() - t
                return made
            for k in range(j + 1, end):
                own.setdefault(k, []).append(grab(k))
            X = self.base.advance(X, j, end, taps=own)
            t1 = time.perf_counter()
            self._e = self._carried(1, self._e, j, Ls)
            self.substeps += end - j
            self.seconds += time.perf_counter() - t1
            j = end
        return X

    def step(self, psi, j):
        """psi(t_j + dt), e carried with it (fixed steps: :meth:`steps`' piece of one)."""
        if not self.control:
            return self.steps(psi, j, j + 1)
        if self.e is None:
            self.e = self.xp.zeros_like(psi)
        dt = self.config.time.dt
        n = self._choose(psi, j)
        psi0, e0 = psi, self.e
        while True:
            psi, e, ok = self._interval(psi0, e0, j, n)
            if ok:
                break
            self._first = None
            self.rejected += 1
            n = self._more(n, j * dt)
        self._e, self.n = e, n          # (not the setter: it drops the next dt's terms made ahead)
        self.h_min = min(self.h_min, dt / n)
        return psi

    def _more(self, n, t):
        """The steps a dt after a rejection: twice as many, at most n_max."""
        if n >= self.n_max:
            T = self.config.time
            raise StepTooSmall("time.tolerance", T.tolerance,
                               f"at t = {t:.6g} it needs steps under time.dt_min = {T.dt_min:g} "
                               f"(raise the tolerance or lower dt_min)")
        return next(m for m in self.ladder if m >= min(2 * n, self.n_max))

    def _choose(self, psi, j):
        """n for this dt: the fewest steps (from half the previous dt's up) whose predicted
        estimate at the dt's start holds, the leading terms made once at the previous n's
        step and scaled, order by order, to the others; ||e|| and every candidate's norm from
        one read of their inner products (:meth:`_gram`) -- made ahead, with the previous
        dt's acceptance, where that dt was taken as one block (:meth:`_interval_block`)."""
        t0 = time.perf_counter()
        dt, T = self.config.time.dt, self.config.time.t_end
        n0 = self.n
        ahead, self._next = self._next, None
        if ahead is not None and ahead[0] == j and ahead[2] == n0 and \
                (ahead[1] is psi or bool(self.xp.array_equal(ahead[1], psi))):   # (a save point's copy)
            parts, G = ahead[3], ahead[4]
        else:
            parts = self.local.parts(psi, j * dt, dt / n0)
            G = to_host(self._gram(self.e, parts))
        e_norm, size = self._sizes(G, [o for o, _ in parts])
        left = max(self.budget - e_norm, 0.1 * self.budget)
        self.tau = left / max(T - j * dt, dt)

        def ok(n):
            return size(n0 / n) <= CHOICE * self.tau * dt / n
        ladder = self.ladder
        i = max(0, ladder.index(n0) - 2)   # from about half the previous dt's steps
        while not ok(ladder[i]):
            if ladder[i] >= self.n_max:
                self._more(ladder[i], j * dt)
            i += 1
        n = ladder[i]
        # the estimate made for h = dt/n0 is the first step's when n stays n0 (it holds:
        # its norm is within CHOICE, under REJECT, of its share)
        self._first = sum(v for _, v in parts) if n == n0 else None
        self.seconds += time.perf_counter() - t0
        return n

    def _block_most(self, X):
        """The most steps whose local errors are made as one block (:meth:`LocalError.block`)
        for X: a run's psi, :data:`PIECE_STEPS` within one chunk of the letters
        (:attr:`LocalError.chunk_steps`, so that a piece's letters are one slice of it) and
        :attr:`LocalError.block_steps`; 0 for a scan's batch, and where a
        chunk is one step (a large N: a block of one is the one-step estimate, and pieces
        of one step each had copied psi into and out of a GPU's graphs every step)."""
        if X.ndim != 1 or type(self.local) is not LocalError:
            return 0
        most = min(PIECE_STEPS, self.local.chunk_steps, self.local.block_steps)
        return most if most > 1 else 0

    def _psi_rows(self, X):
        """The block that holds psi before each step of a piece or a dt (:meth:`_block_most`
        rows), made once: a GPU's graphs fill the rows of one block in their own launch."""
        if self._U is None or self._U.shape[1] != X.size:
            self._U = self.xp.empty((self._block_most(X), X.size), dtype=np.complex128)
            # its rows' views made once: a GPU graph finds a row's place by the view (a new
            # view each step had cost the laser's run ~3 ms of 120, prof_diff_h200x1_20261130T0410.txt)
            self._rows = list(self._U)
        return self._U

    def _interval(self, psi, e, j, n):
        """The dt from step j in n steps: (psi, e, accepted) -- a run's psi in blocks of up to
        :meth:`_block_most` steps by :meth:`_interval_block`, else (a scan's batch, a single
        step) a step at a time (:meth:`_interval_steps`)."""
        if 1 < n and self._block_most(psi):
            return self._interval_block(psi, e, j, n)
        return self._interval_steps(psi, e, j, n)

    def _interval_block(self, psi, e, j, n):
        """:meth:`_interval` in blocks of up to :meth:`_block_most` steps: each block's steps of
        psi taken first (each psi before its step tapped into a block), their local errors
        made at once (:meth:`LocalError.block`) and carried into e; then the dt's largest
        estimate read (one wait, with the next dt's terms) and, where one is over REJECT x
        its share, the dt taken again (its steps all taken before that is known: rejections
        are rare where measured, 0 of 777 steps).  (A dt of more steps than a block had gone a
        step at a time, a read of the device each: the time-error suite's second laser at
        1e-8, 1920 of its 5528 steps, 2.2 of its 2.4 s on one H200, ``adapt_profile_h200x1_
        20261130T1533.txt``; in blocks 0.54-0.64 s, ``adapt_ab_h200x1_20261130T1535.txt``.)"""
        xp, h, k0 = self.xp, self.config.time.dt / n, j * n
        U, rows, most = self._psi_rows(psi), self._rows, self._block_most(psi)
        out, e1, worst, spent = psi, e, [], 0.0
        for a in range(0, n, most):
            m = min(most, n - a)
            U[0] = out
            out = self._stepper(n).advance(out, k0 + a, k0 + a + m,
                                           taps={k0 + a + i: [rows[i]] for i in range(1, m)})
            t0 = time.perf_counter()
            Ls = self.local.block(U[:m], k0 + a, h, alone=True)
            worst.append(xp.max(xp.sum(xp.abs(Ls) ** 2, axis=1)))
            # e carried and the next dt's terms made before the acceptance is read, the
            # three read at once (a rejected dt's are dropped)
            e1 = self._carried(n, e1, k0 + a, Ls)
            spent += time.perf_counter() - t0
        t0 = time.perf_counter()
        worst = worst[0] if len(worst) == 1 else xp.max(xp.stack(worst))
        nxt = None
        if j + 1 < self.config.time.steps:
            parts = self.local.parts(out, (j + 1) * self.config.time.dt, h)
            G = self._gram(e1, parts)
            worst, G = to_host(worst), to_host(G)     # (one wait: the second is done)
            nxt = (j + 1, out, n, parts, G)
        self.seconds += spent + time.perf_counter() - t0
        if math.sqrt(float(worst) * self.config.grid.dx) > REJECT * self.tau * h:
            return psi, e, False
        self._next = nxt
        self.substeps += n
        return out, e1, True

    def _interval_steps(self, psi, e, j, n):
        """:meth:`_interval` a step at a time: each step's local error made and checked
        before the step."""
        dt = self.config.time.dt
        h = dt / n
        step, carry = self._stepper(n), self._carrier(n)
        for i in range(n):
            t = j * dt + i * h
            t0 = time.perf_counter()
            first = i == 0 and self._first is not None       # (it holds: _choose)
            L = self._first if first else self.local.vector(psi, t, h)
            if not first and self._norm([(0, L)]) > REJECT * self.tau * h:
                self.seconds += time.perf_counter() - t0
                return psi, e, False
            e = carry.step(e, j * n + i) + L
            self.seconds += time.perf_counter() - t0
            psi = step.step(psi, j * n + i)
            self.substeps += 1
        return psi, e, True
