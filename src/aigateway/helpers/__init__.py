"""Helpers built on the plain calls, each in a module of its own: structured outputs
(`structured`), tools and the tool runner (`tools`), batches with progress and checkpoints
(`batch`), and batches on a Ray cluster (`ray`)."""
