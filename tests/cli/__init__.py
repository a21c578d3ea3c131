"""Tests of aigateway.cli: the ``aigateway`` command."""
