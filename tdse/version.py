"""The version of tdse (its own module, so that any module can import it without
importing the package's public API)."""
__version__ = "0.2.0"
