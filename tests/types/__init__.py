"""Tests of aigateway.types: the request and reply models."""
