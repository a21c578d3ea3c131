"""Integrations plugged into the request path, each imported only when used: OpenTelemetry tracing and state shared in Redis."""
