"""Helpers built on top of the plain calls (each in a module of its own)."""
