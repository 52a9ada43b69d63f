"""The temporary directory the report works in, and what is wrong with it, in one line.

The report's snapshot, Spark's log and pyspark's hand-over file from its JVM all go in Python's
temporary directory: TMPDIR when Python can write there, else the first of /tmp, /var/tmp,
/usr/tmp and the working directory that it can.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from .. import defaults as D


def trouble(reason: str) -> str:
    """One line: the temporary directory, named, cannot hold the report's working files, why
    (``reason``, in the OS's words where it gave any), and what to do."""
    try:
        root = tempfile.gettempdir()
    except OSError as exc:  # none of the candidates takes a file
        return f"no usable temporary directory for the report's working files ({exc.strerror or exc}): set TMPDIR to a writable directory with room"
    return (
        f"the temporary directory {root} cannot hold the report's working files ({reason}): "
        f"make room there, or set TMPDIR to a directory with room{_passed_over(root)}"
    )


def _passed_over(root: str) -> str:
    """Why TMPDIR is not the directory used, when it is set and is not: Python passes over one
    it cannot write to without a word, and the user who set it would look there."""
    wanted = os.environ.get("TMPDIR")
    if not wanted or os.path.abspath(wanted) == root:
        return ""
    try:
        fd, probe = tempfile.mkstemp(dir=wanted)
    except OSError as exc:
        return f" (TMPDIR={wanted} was passed over: {exc.strerror or exc})"
    os.close(fd)
    os.remove(probe)
    return f" (TMPDIR={wanted} was passed over when the report started)"


def check_room() -> None:
    """Raise OSError unless the temporary directory has REPORT_TEMP_ROOM_BYTES free. Spark's
    JVM writes the port pyspark is to connect to into a file there; when that write fails, the
    JVM stays up without serving and pyspark waits for it for ever, so a start is refused
    beforehand instead."""
    free = shutil.disk_usage(tempfile.gettempdir()).free
    if free < D.REPORT_TEMP_ROOM_BYTES:
        raise OSError(f"{free:,} bytes free, under the {D.REPORT_TEMP_ROOM_BYTES:,} Spark needs there to start")
