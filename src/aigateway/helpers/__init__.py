"""Helpers built on the calls: structured outputs (`aigateway.helpers.structured`)."""
