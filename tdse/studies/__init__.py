"""Studies made of runs: converge (dx, dt, box refinement), floquet (one-period
propagators, quasi-energies, scans), validate (self-checks against SciPy and analytic
cases), spectra (HHG and autocorrelation spectra of a run).  Imports tdse.run and below."""
