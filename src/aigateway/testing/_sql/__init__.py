"""The SQL databases of the mock's database services: SQLite in memory, in a sandbox.

``database.py`` is the sandbox (`SqlDatabase`: no file access, bounded time and memory, a
transaction per call); ``functions.py`` replaces the SQLite functions whose one call the
sandbox could not stop by bounded ones.
"""
