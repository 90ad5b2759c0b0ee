"""Interfaces: the click CLI (``tdse ...``) and the pictures (matplotlib, from files)."""
