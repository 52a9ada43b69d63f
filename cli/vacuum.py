"""`sqsqlite vacuum`: give the database file's free pages back to the disk (docs/explanation/reliability.md,
"Disk space"). Registered with the administration commands (admin.COMMANDS)."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import click

from sqsqlite import command_options
from sqsqlite import defaults as D

from .admin import Seconds, command
from .options import Failure, Settings


@command("vacuum", output="text")
@click.option(
    "--into",
    "into",
    metavar="PATH",
    type=click.Path(dir_okay=False),
    help="Write a compact copy to PATH (a new file) instead; writers go on meanwhile.",
)
@click.option(
    "--wait",
    type=Seconds(min=0, max=86_400),
    default=D.VACUUM_WAIT_SECONDS,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for a write lock another process or program holds before refusing.",
)
def vacuum(s: Settings, into: str | None, wait: float) -> None:
    """Give the database file's free pages back to the disk, with a progress bar.

    A file sqsqlite made gives its space back by itself; on it this returns every free page now,
    in steps that each hold the write lock under a millisecond, while the queues run. An older file
    is rewritten compact with SQLite's VACUUM, which makes it give space back by itself from then
    on: VACUUM holds the write lock for its whole run (other processes' writes wait) and needs
    free disk of about twice the live data; both are checked first, and said in one line if
    missing. Ctrl-C stops it without harm: returned pages stay returned, a VACUUM is undone.
    --into PATH writes a compact copy instead, taking no write lock.

    \b
    Example: sqsqlite vacuum --db app.db
    """
    from sqsqlite import space

    if command_options.no_database_at(s.path):
        raise Failure(f"There is no database at {s.path!r} to vacuum.")
    from sqsqlite.store import Store

    with contextlib.closing(Store(s.path, migrate=False)) as store:
        store.current_revision()  # refuses a file that is not sqsqlite's, touching nothing
    # The bar starts with the work, after the checks: a refusal is its one line alone.
    with contextlib.ExitStack() as stack:
        bar: list[Any] = []
        shown = [0]

        def progress(fraction: float, note: str) -> None:
            if not bar:
                # The note beside the bar: how much is written or returned, of about how much.
                bar.append(
                    stack.enter_context(
                        click.progressbar(length=1000, label=f"Vacuuming {s.path}", file=sys.stderr, item_show_func=lambda note: note)
                    )
                )
            step = int(fraction * 1000) - shown[0]
            if step > 0:
                bar[0].update(step, note)
                shown[0] += step

        try:
            if into is not None:
                before, copy_bytes = space.vacuum_into(s.path, into, progress=progress)
                out = {"From": s.path, "Into": into, "FileBytes": before.file_bytes, "CopyBytes": copy_bytes}
            else:
                before, after = space.vacuum(s.path, space.lock_path(s.path), wait_seconds=wait, progress=progress)
                out = {
                    "FileBytesBefore": before.file_bytes,
                    "FileBytesAfter": after.file_bytes,
                    "FreePagesBefore": before.free_pages,
                    "FreePagesAfter": after.free_pages,
                    "AutoVacuum": after.auto_vacuum,
                }
        except space.VacuumRefused as exc:
            raise Failure(exc.message) from None
        except KeyboardInterrupt:
            click.echo("\nInterrupted: the file is sound; pages returned so far stay returned, a VACUUM under way was undone.", err=True)
            sys.exit(130)
    s.echo(out, "vacuum", default="text")
