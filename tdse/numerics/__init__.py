"""Numerics: how the model is propagated (atomic units).  schemes (midpoint, cfm4 as data),
exponentials (methods registered by name: dense, taylor, chebyshev), chebyshev (the
expansion and its rigorous bound), stepper (one step of a scheme), precheck (theta, plans,
refusals before any work), cost (``auto``'s timed estimates).  Imports tdse.model and
tdse.config below it."""
