"""Whole-package checks: the root modules (errors, display, optional extras, lazy imports), the architecture, the docs and examples, and the key's secrecy."""
