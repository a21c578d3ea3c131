"""Where the checkout's parts are, for tests that read what lies beside the package: the
sources, the docs, the examples, the typing snippets."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The checkout's root (this file is ``tests/_paths.py``)."""
SRC = ROOT / "src"
"""The checkout's sources: what a subprocess gets on ``PYTHONPATH`` to import this aigateway."""
