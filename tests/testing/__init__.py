"""Tests of aigateway.testing (the mock gateway), at the wire level."""
