"""Long polls parked on an event loop, for the endpoint and ``sqsqlite.aio`` alike.

A receive that claims nothing does not hold a thread for its wait. The engine offers one claim
round that never waits (``Actions.receive_round``, down to ``receiving.claim_round``): it
returns the messages, or ``Wait`` (this queue's wake-up since a mark, until a time, and the
poll's deadline). The poll parks on the Wait it was handed, as a future in its queue's line,
and claims again when a commit wakes it, or when its time, or sooner a delay or a visibility
timeout of the queue, is up. (Under an injected clock nothing parks: the receive is the
engine's blocking one, whose wait moves the clock.) The modules, each with one job:

- ``polls``: one poll from its first claim to its answer (``LongPolls.receive``): the rounds,
  the parking between them, the claims polls woken together make together, the hand-back of
  messages claimed for a caller who left;
- ``wakeups``: the engine's Wakeups on the loop (``AsyncWakeups``): the lines of parked polls,
  and the wake-ups (a commit's count, a baton, the ``data_version`` watcher, a stop);
- ``peers``: wake-ups between the processes of one file (UNIX datagrams).
"""

from .peers import Peers
from .polls import Claim, Left, LongPolls, Round, round_of
from .wakeups import WATCH_MIN_GAP, AsyncWakeups, Stopping

__all__ = ["AsyncWakeups", "Claim", "Left", "LongPolls", "Peers", "Round", "Stopping", "WATCH_MIN_GAP", "round_of"]
