"""Tests of aigateway.helpers: the tool runner, batches (on Ray too), and the kind of client each helper takes."""
