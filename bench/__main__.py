"""``python -m bench``: see `bench.run`."""

from __future__ import annotations

from .run import main

raise SystemExit(main())
