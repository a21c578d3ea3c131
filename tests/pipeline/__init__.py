"""Tests of aigateway._pipeline: the request path (retries, deadlines, limits, the ledger, fallbacks)."""
