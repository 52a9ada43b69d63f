"""The engine: the SQS message lifecycle over one SQLite file, as Database and Queue objects.

Domain code only: every statement lives in :mod:`sqsqlite.queries` and runs through
:mod:`sqsqlite.store`. A message's state is never stored as a flag; it follows from
``visible_at``, ``receive_count``, ``sent_at`` and the injected clock (:mod:`.rules`).

The modules, each with one job (upper ones import lower ones, never the reverse):

- ``database``: Database and connect(): queue names, URLs, ARNs; create, list, delete; stats, prune.
- ``transaction``: Transaction, the application's SQL and the queue's operations in one transaction.
- ``queue``: Queue: attributes, tags, purge; its message operations call the modules below
  with its context.
- ``buffered``: BufferedQueue, receives served from larger claims, deletes committed together.
- ``move_tasks``: StartMessageMoveTask and friends.
- ``sending``, ``receiving``, ``deleting``, ``transfer``: the message operations, functions of
  a queue's context.
- ``attributes``: queue attributes as SQS strings and as columns.
- ``rules``: message state, retention cutoff, counts, group heads, the message row.
- ``context``: what the operations are given: Context (a database's store, clock, handle keys,
  wake-ups, account and region) and QueueContext (that and a queue's name, key and ARN).
- ``prepared``: Prepared, a message to send checked against the rules that need no queue.
- ``handles``: receipt handles and message ids.
- ``results``: what the operations return.
- ``wakeups``: the seam long polls wait through (Wakeups; PollingWakeups by default).
"""

from .buffered import BufferedQueue, DeferredDeleteFailure
from .database import Database, connect, name_after, page_token
from .queue import Queue
from .receiving import Wait
from .results import BatchResult, BatchResultErrorEntry, Message, MoveTask, QueueStats, SendResult, SentMessages
from .transaction import Transaction
from .wakeups import PollingWakeups, Wakeups

__all__ = [
    "BatchResult",
    "BatchResultErrorEntry",
    "BufferedQueue",
    "Database",
    "DeferredDeleteFailure",
    "Message",
    "MoveTask",
    "PollingWakeups",
    "Queue",
    "QueueStats",
    "SendResult",
    "SentMessages",
    "Transaction",
    "Wait",
    "Wakeups",
    "name_after",
    "page_token",
    "connect",
]
