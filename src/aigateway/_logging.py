"""The ``aigateway`` logger, and ``AIGATEWAY_LOG`` to switch it on without code.

The pipeline writes one DEBUG line per request (method, path, status, attempt) and one per
retry (what failed, the wait). Lines never hold the API key, the ``Authorization`` header or
any other header: only the method, the URL path, the status and numbers. Every log call is
guarded by ``logger.isEnabledFor``, so logging costs nothing while it is off.

``AIGATEWAY_LOG=debug`` (or ``info``, ``warning``) sets the logger's level and, when nothing
else handles it yet, adds a handler writing to stderr; it is read when a client is created.
"""

from __future__ import annotations

import logging
import os
from typing import Final

__all__ = ["LOG_ENV", "configure_from_env", "logger"]

LOG_ENV: Final = "AIGATEWAY_LOG"
logger = logging.getLogger("aigateway")

_configured_value: str | None = None


def configure_from_env() -> None:
    """Apply ``AIGATEWAY_LOG`` to the ``aigateway`` logger (once per distinct value)."""
    global _configured_value
    value = os.environ.get(LOG_ENV, "").strip().lower()
    if not value or value == _configured_value:
        return
    level = logging.getLevelName(value.upper())
    if not isinstance(level, int):
        return  # an unknown level name: leave logging as the application set it
    _configured_value = value
    logger.setLevel(level)
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
