"""Tests of aigateway._http: transports, connection pools, event loops and bounded bodies."""
