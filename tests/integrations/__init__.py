"""Tests of aigateway.integrations: OpenTelemetry tracing and shared state on Redis."""
