"""python -m tdse: the command line (tdse.ui.cli)."""
from .ui.cli import main

main()
