"""What the operations use of their database and queue: the context each one is given.

The operation modules (sending, receiving, deleting, transfer, move_tasks, bookmarks, ...) are
functions of a small explicit context rather than of a whole Database or Queue, which are the
API above them and call them:

- ``Context``: a database's machinery and identity: the store, the clock, the handle keys, the
  wake-ups, its background move tasks, and the account, region and sender id it acts as. One per
  Database (and per view ``Database.scoped`` makes).
- ``QueueContext``: that, and one queue's identity: its name, key, ARN and whether it is FIFO.
  One per Queue, made with it.
- ``QueueDatabase`` and ``BufferedSource``: what a Queue uses of its Database and a
  BufferedQueue of its Queue, as protocols, so that no module of core/ imports one that
  imports it back.

A transaction (``with db.transaction() as tx:``) needs nothing here: it is the store's (the
store runs every call of the thread inside it), so every operation given this context joins it.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from .. import batches as B
from .. import defaults as D
from .. import validation as V
from ..clock import Clock
from ..errors import QueueDoesNotExist
from ..store import Store
from .handles import Handles
from .results import BatchResult, Message
from .wakeups import Wakeups


class Context:
    """A database's store, clock, handle keys, wake-ups and move-task threads, with the account
    and region it acts as. The wake-ups may be replaced (a server's, sqsqlite.aio's, a test's
    recorder: Database.wakeups), and every QueueContext of the database sees the new ones."""

    __slots__ = ("store", "clock", "handles", "wakeups", "tasks", "account_id", "region", "sender_id")

    def __init__(
        self,
        store: Store,
        clock: Clock,
        handles: Handles,
        wakeups: Wakeups,
        tasks: list[threading.Thread],
        account_id: str,
        region: str,
        sender_id: str,
    ):
        self.store = store
        self.clock = clock
        self.handles = handles
        self.wakeups = wakeups
        self.tasks = tasks  # move tasks running in the background
        self.account_id = account_id
        self.region = region
        self.sender_id = sender_id

    def now(self) -> int:
        return self.clock.now_ms()

    def scope_params(self) -> dict[str, str]:
        """The account and region as the statements' parameters."""
        return {"account": self.account_id, "region": self.region}

    def queue_key(self, name: str) -> str:  # Database.queue_key says what it is
        account, region = self.account_id, self.region
        if account == D.DEFAULT_ACCOUNT_ID and region == D.DEFAULT_REGION:
            return name
        return f"{name} {account} {region}"

    def queue_arn(self, name: str) -> str:
        return f"arn:aws:sqs:{self.region}:{self.account_id}:{name}"

    def name_from_arn(self, arn: str, what: str) -> str:  # Database.name_from_arn says what it is
        region, account, name = V.parse_arn(arn, what)
        if account != self.account_id or region != self.region:
            raise QueueDoesNotExist(
                "The specified queue does not exist.",
                f"{what} {arn!r} names account {account} in {region}; this database holds account {self.account_id} in {self.region}.",
            )
        return name

    def acting_as(self, account_id: str, region: str, sender_id: str) -> Context:
        """This database's machinery acting as another account, region and sender (its
        scoped views; a server's request)."""
        return Context(self.store, self.clock, self.handles, self.wakeups, self.tasks, account_id, region, sender_id)

    def queue(self, name: str) -> QueueContext:
        """The context of this database's queue ``name`` (existing or not: nothing is read)."""
        return QueueContext(self, name)


class QueueDatabase(Protocol):
    """What a Queue and its BufferedQueue use of their database: Database is one. A protocol, so
    that queue.py and buffered.py need not import database.py, which imports them (a Queue's
    ``db`` is typed as the Database that made it: Queue is generic in it)."""

    @property
    def context(self) -> Context: ...
    @property
    def store(self) -> Store: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def handles(self) -> Handles: ...
    @property
    def buffers(self) -> Any: ...  # buffered.LiveBuffers
    def now(self) -> int: ...
    def queue_url(self, name: str) -> str: ...
    def scope_params(self) -> dict[str, str]: ...


class BufferedSource(Protocol):
    """What a BufferedQueue uses of its queue: Queue is one (BufferedQueue is generic in it)."""

    @property
    def db(self) -> QueueDatabase: ...
    @property
    def name(self) -> str: ...
    @property
    def fifo(self) -> bool: ...
    @property
    def context(self) -> QueueContext: ...
    def delete_message(self, receipt_handle: str | Message) -> None: ...
    def delete_message_batch(self, entries: B.Entries) -> BatchResult: ...
    def change_message_visibility(self, receipt_handle: str, visibility_timeout: int) -> None: ...
    def change_message_visibility_batch(self, entries: B.Entries) -> BatchResult: ...


class QueueContext(Context):
    """A database's Context and one queue's identity (its name, key, ARN, FIFO-ness): what a
    message operation is given. Cheap, one per Queue: the database's fixed parts are copied,
    its wake-ups read from it (they may be replaced after the queue is made)."""

    __slots__ = ("database", "name", "key", "arn", "fifo")

    def __init__(self, context: Context, name: str):
        self.database = context
        self.store = context.store
        self.clock = context.clock
        self.handles = context.handles
        self.tasks = context.tasks
        self.account_id = context.account_id
        self.region = context.region
        self.sender_id = context.sender_id
        self.name = name
        self.key = context.queue_key(name)
        self.arn = context.queue_arn(name)
        self.fifo = name.endswith(".fifo")

    # Read-only here: they are replaced on the database's Context.
    @property
    def wakeups(self) -> Wakeups:  # type: ignore[override]
        return self.database.wakeups

    def __repr__(self) -> str:
        return f"QueueContext({self.name!r})"
