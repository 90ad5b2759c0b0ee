"""Running: backend (array module, GPUs, threads), plan (:func:`prepare`: set-up once),
loop (:func:`evolve`: the one loop, from save point to save point, handing the state to
sinks), rows (the observables), eigenpairs (H(t)'s, by look-ahead), sinks (snapshots,
progress), timeerror (the in-run estimate), snapshots (the HDF5 file), interrupts,
resources (memory, disk, CPU time), driver (:func:`run`: a whole run to a file).
Imports tdse.numerics, tdse.model and tdse.config below it."""
