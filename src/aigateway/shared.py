"""State shared by many processes on one API key, kept in Redis.

``Client(..., shared_state=RedisState(url))`` makes the client-side rate limit
(``wait_for_rate_limit=True`` or ``rate_limit=``), the credit budget (``max_credits=``,
``with_budget``), the usage totals and automatic idempotency keys of actions one for every
process using the same key, instead of one per process. Needs the ``redis`` extra
(``python -m pip install -e '.[redis]'`` in a checkout).
"""

from __future__ import annotations

from aigateway.integrations.redis.state import RedisState

__all__ = ["RedisState"]
