"""What the look-ahead's fork server imports at its start (multiprocessing's forkserver
preload, :func:`tdse.run.eigenpairs._start_server`): CuPy shut out and the eigensolvers imported
once (:func:`tdse.run.ahead_child.prepare`), so that each worker forked from it starts with
them in memory -- ~30 ms a worker after the server's own start on 2 CPUs, where a spawned
one imports NumPy and SciPy again (~0.2-0.4 s; more on a GPU host).  Nothing else imports
this module."""
from .ahead_child import prepare

prepare()
