"""CUDA sources and their CuPy kernels, each compiled once a process and definition:
:mod:`.codegen` prints an :class:`tdse.expression.Expr` as C; :mod:`.potential` (V and dV/dx
of a batch), :mod:`.measure` (the observables' grid sums), :mod:`.stencil` (finite-difference
products and the Chebyshev recurrence's element-wise steps) :mod:`.chain` (the one-member
dense-T kernels of the CUDA-graph step) and :mod:`.columns` (the 1D + 1D model with Psi's
columns split over GPUs: streams, peer copies and its element-wise kernels), :mod:`.capture` (a CUDA graph
captured from a body of launches; the copies around its buffers).  Nothing here imports CuPy at module level: the
kernels are built from the ``cp`` module a caller passes."""
