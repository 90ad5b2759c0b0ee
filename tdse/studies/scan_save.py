"""What a scan keeps of each member (``tdse scan --save``; atomic units, hbar = m_e = e = 1).

By default (``final``) every observable's value at t_end, the harmonic spectrum of the
member's acceleration (with a [field] whose omega is not scanned) and, where asked for,
t-SURFF's P(k) and the final psi; ``series:NAME,...`` keeps the named observables' whole
time series too, ``series`` all of them (the whole record, what a scan kept before #59).  A
batch is reduced where it ran -- a Dask worker or this process -- before its part is written
or sent, so the scan holds, writes and moves about 1 + F numbers a member and quantity (F:
the spectrum's frequencies) instead of one a step: atom_hhg's record was ~0.56 MB a member.
"""
from __future__ import annotations

import numpy as np

from ..config import ConfigError
from ..run.scanfile import SERIES, at_end, save_text  # noqa: F401  (the file's definitions)

__all__ = ["SERIES", "parse_save", "save_text", "reduce_batch", "spectra_of", "at_end"]


def parse_save(text) -> tuple:
    """``--save`` -> the names kept as time series (in :data:`SERIES`' order): () for
    ``final``, all for ``series``, those named for ``series:NAME[,NAME...]``; a ConfigError
    naming ``--save`` otherwise."""
    text = "final" if text is None else str(text).strip()
    if text == "final":
        return ()
    if text == "series":
        return SERIES
    if text.startswith("series:"):
        names = {n.strip() for n in text[len("series:"):].split(",") if n.strip()}
        bad = sorted(names - set(SERIES))
        if names and not bad:
            return tuple(n for n in SERIES if n in names)
        raise ConfigError("--save", text, f"no time series named {', '.join(bad)}; they are "
                          f"{', '.join(SERIES)}" if bad else "name at least one series")
    raise ConfigError("--save", text, "give final, series or series:NAME[,NAME...]")


def spectra_of(sc):
    """(omega, window) of the harmonic spectra a scan keeps: with a [field] in the base
    input whose omega is not scanned (a scanned omega changes the order axis per member),
    its observables recorded at equal intervals (every observables_every steps, the last
    step among them) 8 times or more; else None."""
    fld, T = sc.base.potential.field, sc.base.time
    every = sc.base.output.observables_every
    if fld is None or any(k.startswith("field.omega") or k == "field.wavelength" for k, _ in sc.axes):
        return None
    return (fld.omega, "hann") if T.steps % every == 0 and T.steps // every + 1 >= 8 else None


def reduce_batch(res: dict, series, spectra=None) -> dict:
    """A batch's result (:func:`tdse.studies.scan.run_batch`: name -> (B, S[, K])) with
    each of :data:`SERIES` not in ``series`` at t_end (B[, K]) and, with ``spectra`` =
    (omega, window), each member's harmonic spectrum ("hhg_power" (B, F), "hhg_order" (F,))
    from its acceleration, made before the series go (:func:`tdse.studies.spectra.hhg_power`,
    the batch in one FFT)."""
    if spectra is not None and "hhg_power" not in res:
        from .spectra import hhg_power
        omega, res["hhg_power"] = hhg_power(res["t"], res["acceleration"], spectra[1])
        res["hhg_order"] = omega / spectra[0]
    for n in SERIES:
        if n in res and n not in series:
            res[n] = np.ascontiguousarray(np.asarray(res[n])[:, -1])
    return res
