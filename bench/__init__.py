"""The benchmark suite of aigateway: ``python -m bench`` (see bench/README.md).

A package only so that ``python -m bench``, ``python -m bench.server`` and the child processes
(``python -m bench.child``) can be started from the repository root.
"""
