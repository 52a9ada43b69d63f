"""The table `sqsqlite stats` prints by default, fitted to the terminal.

Its JSON (``--output json``) names every figure as Amazon SQS's CloudWatch does; five of those
names are 30 to 50 characters long, so the table uses short titles, explained in a legend under
it. A fair queue's four quiet-group figures equal the queue's own while it has no noisy group,
so they are shown only when some queue has one. A table still wider than the terminal is
turned on its side, one block of title and value per queue. ``--wide`` prints every column
under its CloudWatch name, as wide as that makes it.
"""

from __future__ import annotations

import textwrap
from typing import Any

from .output import grid

NOISY = "ApproximateNumberOfNoisyGroups"
QUIET = (
    "ApproximateNumberOfMessagesVisibleInQuietGroups",
    "ApproximateNumberOfMessagesNotVisibleInQuietGroups",
    "ApproximateNumberOfMessagesDelayedInQuietGroups",
    "ApproximateAgeOfOldestMessageInQuietGroups",
)
TITLES = {
    "OldestAgeSeconds": "OldestAge",
    "DeadLetterQueue": "DLQ",
    "DeadLetterDepth": "DLQDepth",
    NOISY: "Noisy",
    **dict(zip(QUIET, ("QuietVisible", "QuietInFlight", "QuietDelayed", "QuietAge"))),
}
_LEGEND = {
    "OldestAge": "OldestAge: the oldest message's age in seconds.",
    "DLQ": "DLQ: the dead-letter queue; DLQDepth: its messages.",
    "Noisy": f"Noisy: a fair queue's noisy message groups ({NOISY}).",
    "QuietVisible": "QuietVisible, QuietInFlight, QuietDelayed, QuietAge: the same figures for its quiet groups alone.",
}
_TAIL = "--wide or --output json: every figure under its CloudWatch name."


def render(rows: list[dict[str, Any]], width: int, wide: bool = False) -> str:
    """The table of ``rows`` (one dict a queue, keyed by CloudWatch's names), its lines at most
    ``width`` long where a queue's name and figures allow, then its legend; "" for no rows."""
    if not rows:
        return ""
    keys = list(dict.fromkeys(k for row in rows for k in row))
    if wide:
        return grid(keys, [[row.get(k) for k in keys] for row in rows]) + "\n"
    if not any(row.get(NOISY) for row in rows):
        keys = [k for k in keys if k not in QUIET]
    titles = [TITLES.get(k, k) for k in keys]
    table = grid(titles, [[row.get(k) for k in keys] for row in rows])
    if max(map(len, table.splitlines())) > width:  # on its side: each queue a block of its own
        name = keys[0]
        table = "\n".join(grid(["", str(row.get(name))], [[t, row.get(k)] for t, k in zip(titles[1:], keys[1:])]) for row in rows)
    legend = " ".join([_LEGEND[t] for t in titles if t in _LEGEND] + [_TAIL])
    return table + "\n" + "\n".join(textwrap.wrap(legend, width=max(40, min(width, 100)))) + "\n"
