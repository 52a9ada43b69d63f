"""Long polls parked on an event loop, for the endpoint and ``sqsqlite.aio`` alike.

A receive that claims nothing does not hold a thread for its wait: its claim, called parkable,
raises ``Park`` out of the engine's wait; the poll waits as a future in its queue's line and
claims again when a commit wakes it, or when its time, or sooner a delay or a visibility timeout
of the queue, is up. The modules, each with one job:

- ``polls``: one poll from its first claim to its answer (``LongPolls.receive``): the rounds,
  the parking between them, the claims polls woken together make together, the hand-back of
  messages claimed for a caller who left;
- ``wakeups``: the engine's Wakeups on the loop (``AsyncWakeups``): the lines of parked polls,
  and the wake-ups (a commit's count, a baton, the ``data_version`` watcher, a stop);
- ``peers``: wake-ups between the processes of one file (UNIX datagrams).
"""

from .peers import Peers
from .polls import Claim, Left, LongPolls, Round
from .wakeups import WATCH_MIN_GAP, AsyncWakeups, Park, Stopping

__all__ = ["AsyncWakeups", "Claim", "Left", "LongPolls", "Park", "Peers", "Round", "Stopping", "WATCH_MIN_GAP"]
