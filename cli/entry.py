"""The ``sqsqlite`` console script's entry point: the command line of :mod:`sqsqlite.cli.main`,
with an interrupt that lands while that module's imports run (the first tens of milliseconds of
every command) answered as any other interrupt is, exit 130 and no traceback."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from .main import EXIT_INTERRUPTED
        from .main import main as command_line
    except KeyboardInterrupt:
        sys.stderr.write("\nInterrupted.\n")
        sys.exit(130)
    try:
        command_line()
    except KeyboardInterrupt:  # between the imports and click's own handling
        sys.stderr.write("\nInterrupted.\n")
        sys.exit(EXIT_INTERRUPTED)
