"""What `tdse floquet` prints: the quasi-energies of the Floquet states of H(0)'s lowest
eigenstates, their overlaps and ties, one period or a scan of one key (atomic units)."""
from __future__ import annotations

__all__ = ["floquet_table", "floquet_scan_table"]


def floquet_table(res, out):
    """One period's table (:func:`tdse.studies.floquet.analyse`'s result) through ``out``
    (``click.echo``)."""
    if res.get("dt_note"):
        out(f"note: {res['dt_note']}", err=True)
    out(f"T = {res['period']:.10g} ({res['steps']} steps of dt = {res['dt']:.6g}, "
        f"scheme {res['scheme']}), "
        f"||U^H U - I|| / sqrt(N) = {res['unitarity']:.2e}; atomic units")
    out(f"{'n':>3} {'E_n':>16} {'E_n T mod 2pi':>14} {'Floquet phase':>14} {'eps (Ha)':>14} {'overlap':>8}")
    for s in res["states"]:
        tie = f"  * shares its Floquet state with n = {', '.join(map(str, s['shared_with']))}" \
            if s["shared_with"] else ""
        out(f"{s['n']:3d} {s['E_n']:16.10f} {s['E_n_T_mod_2pi']:14.10f} {s['phase']:14.10f} "
            f"{s['quasi_energy']:14.10f} {s['overlap']:8.5f}{tie}")
    if res["ties"]:
        out("* two or more states of H(0) have their largest overlap with the same Floquet "
            "state (an avoided crossing or strong mixing): their quasi-energy is one number, "
            "not one per state", err=True)


def floquet_scan_table(res, key, count, out):
    """A scan's table (:func:`tdse.studies.floquet.scan`'s result over ``count`` values of
    ``key``) through ``out``."""
    notes = {p["dt_note"] for p in res["points"] if p["dt_note"]}
    if notes:
        out(f"note: {len(notes)} point(s) changed dt to fit a whole number of steps into "
            f"T (pass --steps to fix M); see the JSON's dt_note", err=True)
    K = len(res["points"][0]["states"])
    unit = f" ({res['key_unit']})" if res["key_unit"] else ""
    out(f"{key}{unit}: {count} values; quasi-energies (hartree) of the Floquet "
        f"states of the lowest {K} eigenstates of H(0) (overlap); atomic units")
    head = "".join(f" {'eps_' + str(k):>12} {'ov':>5}" for k in range(K))
    out(f"{'value':>10} {'T':>9} {'M':>5} {'|U^H U-I|':>9}{head}  method")
    for p in res["points"]:
        cols = "".join(f" {st['quasi_energy']:12.7f} {st['overlap']:5.3f}{'*' if st['shared_with'] else ' '}"
                       for st in p["states"])
        out(f"{p['value']:10.5g} {p['period']:9.5g} {p['steps']:5d} {p['unitarity']:9.1e}"
            f"{cols}  {p['method']}")
    if any(p["ties"] for p in res["points"]):
        out("* shares its Floquet state with another state of H(0) at that value (an "
            "avoided crossing or strong mixing; JSON: shared_with)", err=True)
