"""Helpers built on the client's calls (batches, ...); each lives in a module of its own."""
