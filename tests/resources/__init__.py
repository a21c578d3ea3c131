"""Tests of aigateway.resources: what each endpoint sends and returns."""
