"""What the copy tests share: the command as a process, and a remote queue read out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SQSQLITE = [sys.executable, str(Path(sys.executable).with_name("sqsqlite"))]


def drain(client, url: str) -> list[dict]:
    """Every message of a remote queue, received and deleted."""
    out = []
    while True:
        got = client.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"], VisibilityTimeout=300
        ).get("Messages", [])
        if not got:
            return out
        out += got
        # Deleted as they come: a FIFO queue holds a group back while its messages are in flight.
        client.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])


def cli(*args: str, env: dict, code: int = 0) -> subprocess.CompletedProcess:
    """``sqsqlite ARGS`` as a process: its exit status is ``code``, and no traceback."""
    done = subprocess.run([*SQSQLITE, *args], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    return done
