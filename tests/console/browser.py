"""Debian's chromium, driven by Playwright, for the console's browser tests and the screenshots in
docs/howto/console.md. Playwright never downloads a browser here: it launches the system's."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHROMIUM = os.environ.get("SQSQLITE_CHROMIUM", "/usr/bin/chromium")
# Headless, and nothing that would reach the network or keep state between runs.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def missing() -> str | None:
    """Why the browser tests can't run here, or None when they can."""
    if not (os.path.isfile(CHROMIUM) or shutil.which(CHROMIUM)):
        return f"no chromium at {CHROMIUM}: apt-get install chromium (make test does, as root) or set SQSQLITE_CHROMIUM"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed: pip install -e '.[dev]'"
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless chromium (Playwright's Browser), closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()
