"""``python -m aigateway``: the same as the ``aigateway`` command."""

from .cli import main

raise SystemExit(main())
