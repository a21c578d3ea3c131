"""Measure a page's layout in a real browser: headless Chromium (Debian's ``chromium``) opens
it, a script in the page writes what it measured into ``<pre id="layout">`` as JSON, and
``--dump-dom`` prints the page with it. Nothing drives the browser but its command line, and no
request leaves the machine (every host name resolves to nothing)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .._integrations import integration_missing

__all__ = ["chromium", "measure"]


def chromium() -> str:
    """The Chromium on PATH (Debian's package installs ``chromium``), or a skip saying how to
    get one (a failure under CI)."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    integration_missing("Chromium", "apt-get install chromium (Debian's package)")


def command(page: Path, width: int, height: int, screenshot: Path | None = None) -> list[str]:
    """The command line that opens ``page`` in a ``width`` x ``height`` window and prints its
    DOM (and saves a screenshot, when given a path)."""
    return [
        chromium(),
        "--headless",
        "--no-sandbox",  # as root (CI)
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--hide-scrollbars",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={page.parent / f'.profile-{page.stem}'}",
        f"--window-size={width},{height}",
        *([f"--screenshot={screenshot}"] if screenshot else []),
        "--dump-dom",
        page.as_uri(),
    ]


def measured(stdout: str, stderr: str, returncode: int) -> dict[str, Any]:
    """What the page's script wrote into ``<pre id="layout">``."""
    found = re.search(r'<pre id="layout"[^>]*>(.+?)</pre>', stdout, re.DOTALL)
    assert found, f"Chromium measured nothing (exit {returncode}): {stderr[-2000:]}"
    return dict(json.loads(html.unescape(found.group(1))))


def measure(
    pages: list[Path], width: int, height: int, screenshot: bool = False
) -> list[dict[str, Any]]:
    """Open each page (all at once, one browser each) and return what each one measured;
    with ``screenshot``, each page's picture is kept beside it as ``<name>.png``."""
    running = [
        subprocess.Popen(
            command(page, width, height, page.with_suffix(".png") if screenshot else None),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for page in pages
    ]
    results = []
    for process in running:
        stdout, stderr = process.communicate(timeout=60)
        results.append(measured(stdout, stderr, process.returncode))
    return results
