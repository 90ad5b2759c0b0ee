"""What the look-ahead's fork server imports at its start (multiprocessing's forkserver
preload, :func:`tdse.run.eigenpairs._start_server`): CuPy shut out and the eigensolvers imported
once (:func:`tdse.run.ahead_child.prepare`), so that each worker forked from it starts with
them in memory -- ~30 ms a worker after the server's own start on 2 CPUs, where a spawned
one imports NumPy and SciPy again (~0.2-0.4 s; more on a GPU host).  Then the file that
says so to the process that started the server (:func:`tdse.run.ahead_child.server_marker`):
until it is there that process's runs spawn their workers, where a fork would wait for these
imports (:func:`tdse.run.eigenpairs._context`).  Nothing else imports this module."""
import os

from .ahead_child import prepare, server_marker

prepare()
try:
    with open(server_marker(os.getppid()), "w"):
        pass
except OSError:          # (no such file: the parent spawns its workers, as before the server)
    pass
