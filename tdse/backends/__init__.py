"""Backend-specific code: every device source of the project lives under this package
(``tdse.backends.cupy``), generated from the model's definitions where it evaluates physics
(a potential's term and force, the observables' grid sums); ``tdse.model`` holds none
(``tests/test_structure.py`` checks)."""
