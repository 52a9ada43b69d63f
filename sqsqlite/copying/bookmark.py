"""How far a copy to another endpoint has sent a queue's messages, as kept in its bookmark, and
which messages it sends next.

A standard queue's copy goes in row order: its bookmark is the row id it has sent everything up
to, then the row ids past it the endpoint accepted out of turn ("AFTER AHEAD...").

A FIFO queue's copy goes group by group, each group in the queue's order, which is its sequence
numbers: every message that arrives in a FIFO queue (sent, imported, moved in by a redrive or as
a dead letter) takes the queue's next one, so they are unique in the queue and only grow, while
a message moved in keeps its old row id. Its bookmark ("fifo " and a JSON object) says that
every message with a sequence number up to ``done`` was sent, and, while a walk is in progress,
that the walk over the sequence numbers in (done, upto] has sent everything up to the (group,
sequence number) pair ``after``, and the messages in ``ahead`` (sequence numbers) out of turn.
``upto`` is the queue's last sequence number when the walk began: a copy run again continues
the same walk, and what arrived since is sent by the next walk, after its group's earlier
messages. The bookmark also names the queue its numbers are of (its id and creation time): a
queue deleted and made again under the name numbers from 1 again, and is copied from its first
message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from ..core import Queue

_GROUPS = b"fifo "  # a FIFO bookmark's first word; the row ids of the other kind are numbers


def copy_key(arn: str, created: str, endpoint: str | None, source: str) -> str:
    """The name of the bookmark a copy of the local queue ``source`` (its ARN here) to one queue
    at the other end keeps its position under.

    The ARN there alone does not name one queue: a queue deleted and made again under its name
    has the ARN of the one before, and every emulator of one kind (LocalStack, ``sqsqlite
    serve``, moto) gives its queues the same account and region, so two of them give a queue of
    one name the same ARN. A position kept for another of these would pass over every message it
    says was sent. So the key also holds the queue's CreatedTimestamp there (a queue made again
    has a later one) and the endpoint's URL, spelled one way (scheme and host in lower case, the
    port given, no trailing slash). The file holds queues of many accounts and regions, and a
    position is a row id of one of them: the queues of one name in two of them, copied to one
    queue there, each keep their own, so the key ends with the local queue's ARN (its account,
    region and name)."""
    return f"{previous_copy_key(arn, created, endpoint)} from {source}"


def previous_copy_key(arn: str, created: str, endpoint: str | None) -> str:
    """The name an older sqsqlite kept a copy's position under: the queue there alone (not the
    local queue, as if the file held one account's queues in one region)."""
    return f"{legacy_copy_key(arn)} created {created or '?'} at {_endpoint(endpoint)}"


def copy_lease_key(name: str, endpoint: str | None) -> str:
    """The name of the lease a copy to the queue ``name`` at the endpoint takes before it asks
    anything of it (lease.py): known before the queue there exists, unlike its ARN and creation
    time. Two copies that would keep one position (one copy_key) hold one lease: that key's ARN
    ends in the queue's name, the one each copy creates and sends to, and its endpoint is spelled
    here the same way. Copies of one name to two accounts or regions at one URL, or to a queue
    deleted and made again, share the lease though not the position: the second is refused."""
    return f"copy-to-queue {name} at {_endpoint(endpoint)}"


def legacy_copy_key(arn: str) -> str:
    """The name a still older sqsqlite kept a copy's position under: the ARN there alone."""
    return f"copy-to {arn}"


def _endpoint(url: str | None) -> str:
    if not url:
        return "?"
    try:
        parts = urlsplit(url.strip())
        scheme, host, port = parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    except ValueError:  # not a URL boto3 would have taken: as it is
        return url
    port = port or {"http": 80, "https": 443}.get(scheme)
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{port}{parts.path.rstrip('/')}"


@dataclass
class RowBookmark:
    """A standard queue's copy: the row id ``after`` it has sent everything up to, and the row
    ids past it in ``ahead``."""

    after: int = 0
    ahead: set[int] = field(default_factory=set)

    @classmethod
    def parse(cls, value: bytes | None) -> RowBookmark:
        numbers = [int(word) for word in (value or b"0").split()]
        return cls(numbers[0], set(numbers[1:]))

    def walking(self) -> bool:
        """Whether an earlier run's walk is in progress: never, in row order."""
        return False

    def records(self, queue: Queue) -> Iterator[tuple[Any, dict]]:
        return ((p, r) for p, r in queue.message_records(after=self.after) if p not in self.ahead)

    def sent(self, in_turn: list, beyond: list) -> None:
        """The endpoint took the batch's entries at ``in_turn`` (its first ones, in order) and,
        past the first it did not take, those at ``beyond``."""
        if in_turn:
            self.after = in_turn[-1]
        self.ahead = {p for p in self.ahead | set(beyond) if p > self.after}

    def finished(self) -> bool:
        """The records are all sent: nothing to change, as row order has no bound."""
        return False

    def value(self) -> bytes:
        return " ".join(str(n) for n in (self.after, *sorted(self.ahead))).encode()


@dataclass
class GroupBookmark:
    """A FIFO queue's copy (see the module's docstring); ``upto`` is None between walks."""

    done: int = 0
    upto: int | None = None
    after: tuple[str, int] = ("", 0)
    ahead: set[int] = field(default_factory=set)
    # Which queue of its name the numbers are of (Sequences.queue): a queue deleted and made again
    # numbers its messages from 1 again, so a bookmark of the one before says nothing of them.
    queue: str = ""

    @classmethod
    def parse(cls, value: bytes) -> GroupBookmark:
        fields = json.loads(value[len(_GROUPS) :])
        return cls(fields["done"], fields["upto"], (fields["group"], fields["after"]), set(fields["ahead"]), fields.get("queue", ""))

    @classmethod
    def converted(cls, queue: Queue, old: RowBookmark) -> GroupBookmark:
        """The bookmark a copy in row order (``old``) left, as this kind: what it sent (the live
        messages at or below its row id, or ahead of it) by their sequence numbers, no walk in
        progress."""
        # Read before the pass: every message numbered up to it had arrived, so the pass meets it
        # if it is still live; one above it may arrive after the pass went by, so done stops there.
        which, bound = queue.last_sequence()
        sent: set[int] = set()
        unsent: set[int] = set()
        for row_id, record in queue.message_records():
            (sent if row_id <= old.after or row_id in old.ahead else unsent).add(record["SequenceNumber"])
        done = min(min(unsent, default=bound + 1) - 1, bound)
        return cls(done, None, ("", 0), {n for n in sent if n > done}, which)

    def walking(self) -> bool:
        """Whether an earlier run's walk is in progress."""
        return self.upto is not None

    def records(self, queue: Queue) -> Iterator[tuple[Any, dict]]:
        """The walk's messages not yet sent; a walk begins if none is in progress (from the
        beginning, for a queue made again since the bookmark was written)."""
        now = queue.last_sequence()
        if now.queue != self.queue:
            if self.queue:
                self.done, self.upto, self.after, self.ahead = 0, None, ("", 0), set()
            self.queue = now.queue
        if self.upto is None:
            self.upto = now.last
        walk = queue.group_records(done=self.done, upto=self.upto, after=self.after)
        return ((p, r) for p, r in walk if p[1] not in self.ahead)

    def sent(self, in_turn: list, beyond: list) -> None:
        """As RowBookmark.sent; the positions are (group, sequence number) pairs."""
        if in_turn:
            self.after = in_turn[-1]
        # Kept until the walk ends: whether one is behind ``after`` depends on its group.
        self.ahead |= {sequence for _, sequence in beyond}

    def finished(self) -> bool:
        """The walk is over, everything up to its bound sent: whether the bookmark changes (a
        walk over no sequence number leaves it as it was)."""
        if self.upto is None:
            return False
        changed = self.upto != self.done
        self.done, self.upto, self.after = self.upto, None, ("", 0)
        self.ahead = {n for n in self.ahead if n > self.done}
        return changed

    def value(self) -> bytes:
        fields = {
            "done": self.done,
            "upto": self.upto,
            "group": self.after[0],
            "after": self.after[1],
            "ahead": sorted(self.ahead),
            "queue": self.queue,
        }
        return _GROUPS + json.dumps(fields, separators=(",", ":")).encode()


def read_bookmark(queue: Queue, value: bytes | None) -> tuple[RowBookmark | GroupBookmark, bool]:
    """The copy's bookmark of ``queue``, of the kind the queue takes, and whether it was just
    converted from the other kind (to keep as it is now, so that it is converted once)."""
    if not queue.fifo:
        return RowBookmark.parse(value), False
    if value is None:
        return GroupBookmark(), False
    if value.startswith(_GROUPS):
        return GroupBookmark.parse(value), False
    return GroupBookmark.converted(queue, RowBookmark.parse(value)), True
