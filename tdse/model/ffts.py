"""The FFTs of the sinc-DVR kinetic energy (``tdse.model.hamiltonian``: T X as
ifft(lambda fft(X padded to 2N))[:N], the circulant embedding of the Toeplitz T) and of the
error carrier's sine steps (``tdse.numerics.carrier``, 2N' + 2 points), each written once
against the array module: on a GPU the array module's own transforms; on the host the
transforms below.

SciPy's ``scipy.fft.fft`` spends ~2.4 us of a small transform's ~4.4 us (N = 320, 2 CPUs) in
its backend dispatch and argument checks; its pocketfft binding called directly, in place on
the padded buffer, computes the same transforms (the same library call: the same bits).  That
binding is SciPy's private API, so it is used only where a check at its first use finds it
there with the signature this module calls and giving ``scipy.fft``'s bits, forward and
backward, for a vector and a block; else ``scipy.fft`` as before.  Measured on 2 CPUs, one
application of the DVR's H to a vector: 14.5 -> 8.9 us at N = 256, 19.8 -> 14.5 at 512,
59.3 -> 51.9 at 2048, the same bits; the time-error suite's laser run (DVR N = 320,
Chebyshev) x0.75 adaptive at 1e-6, x0.82 at a fixed dt
(``benchmarks/results/host_fft_cpu2_20261202T1457.txt``)."""
from __future__ import annotations

import os

import numpy as np

__all__ = ["padded_kinetic", "fft_axis0"]

_POCKET = []        # [c2c or None], decided once a process

#: a block's padded kinetic FFT is threaded (all cores) from this many columns, in one
#: thread below: on 2 CPUs two threads took a block of 8-16 columns 2-4x longer (N = 320,
#: B = 10: 180 against 59 us; N = 2000, B = 64: 2104 against 3409;
#: ``benchmarks/results/dvr_block_kinetic_cpu2_20261202T1540.txt``)
FFT_THREADS_MIN_B = 32


def _pocket():
    """SciPy's pocketfft ``c2c(a, axes, forward, inorm, out, nthreads)``, where it is there
    and gives ``scipy.fft.fft`` / ``ifft``'s bits (inorm 0 / 2); else None."""
    if not _POCKET:
        c2c = None
        try:
            import scipy.fft
            from scipy.fft._pocketfft.pypocketfft import c2c as candidate
            rng = np.random.default_rng(7)
            for shape in ((10,), (12, 3)):
                x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
                f, b = x.copy(), x.copy()
                candidate(f, (0,), True, 0, f, 1)
                candidate(b, (0,), False, 2, b, 1)
                if not (np.array_equal(f, scipy.fft.fft(x, axis=0))
                        and np.array_equal(b, scipy.fft.ifft(x, axis=0))):
                    break
            else:
                c2c = candidate
        except Exception:  # noqa: BLE001 -- not there, or another signature: scipy.fft
            c2c = None
        _POCKET.append(c2c)
    return _POCKET[0]


def padded_kinetic(X, lam, n, xp=np):
    """ifft(lam fft(pad))[:n] with pad X zero-padded to 2n along axis 0 (``lam`` (2n,) for a
    vector, (2n, 1) or (2n, B) for a block's columns) on ``xp``'s device: a view of one new
    array."""
    pad = xp.zeros((2 * n,) + X.shape[1:], dtype=np.complex128)
    pad[:n] = X
    if xp is not np:
        return xp.fft.ifft(lam * xp.fft.fft(pad, axis=0), axis=0)[:n]
    c2c = _pocket()
    threads = 1 if X.ndim == 1 or X.shape[1] < FFT_THREADS_MIN_B else (os.cpu_count() or 1)
    if c2c is None:
        import scipy.fft
        return scipy.fft.ifft(lam * scipy.fft.fft(pad, axis=0, workers=threads), axis=0, workers=threads)[:n]
    c2c(pad, (0,), True, 0, pad, threads)
    pad *= lam
    c2c(pad, (0,), False, 2, pad, threads)
    return pad[:n]


def fft_axis0(y, forward, xp=np):
    """fft (``forward``) or ifft of ``y`` (complex128, C-contiguous) along axis 0 on ``xp``'s
    device, ``y`` overwritten: on the host ``y`` itself where the binding is vouched for, else
    scipy.fft's result (``overwrite_x``) -- the same bits either way, one thread; on a GPU
    cupyx.scipy.fft's (``overwrite_x``)."""
    if xp is not np:
        import cupyx.scipy.fft as fft
    else:
        c2c = _pocket()
        if c2c is not None:
            return c2c(y, (0,), bool(forward), 0 if forward else 2, y, 1)
        import scipy.fft as fft
    return (fft.fft if forward else fft.ifft)(y, axis=0, overwrite_x=True)
