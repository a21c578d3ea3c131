"""Tests of aigateway._client: `Client` and `AsyncClient` as users meet them, and their copies."""
