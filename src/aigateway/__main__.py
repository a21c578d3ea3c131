"""``python -m aigateway``: the same as the ``aigateway`` command."""

from aigateway.cli import main

raise SystemExit(main())
