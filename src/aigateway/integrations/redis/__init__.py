"""State shared by many processes on one API key (rate limit, credit budget, usage,
idempotency keys), kept in Redis; see `aigateway.shared.RedisState`."""
