"""The Kombu virtual transport over a sqsqlite file: ``sqsqlite:///queue.db``.

Each Kombu queue is a sqsqlite queue (``queue_name_prefix`` and its name made SQS-safe together,
options.py). A message Kombu publishes is sent as one SQS message whose body is Kombu's JSON
payload, to the queue named or to those its exchange's bindings route it to: bindings are
recorded in the file (bindings.py), so a process routes by those any process declared. A
consumer receives up to its free prefetch slots at once, which leases them for the visibility
timeout, hands Kombu one message a drain (the rest wait in the channel, released at once if
their consumer goes), and then:

- **ack** deletes it (with its receipt handle, which is the delivery tag);
- **reject with requeue**, and unacknowledged deliveries when a channel closes (a worker's warm
  shutdown), release it: visible again at once (ChangeMessageVisibility to 0);
- **reject without requeue** deletes it, unless its queue has a RedrivePolicy: then it is left
  to come back after the visibility timeout and, after ``maxReceiveCount`` receives, to move to
  the dead-letter queue, as Kombu's SQS transport does;
- a consumer that dies holding it acks nothing, and the message is received again when its
  visibility timeout ends.

A countdown or ETA becomes the message's DelaySeconds, so the message waits in the database and
not leased in a worker's memory; SQS's limit is 900 s, and a longer one is sent with 900 s, as
Kombu's SQS transport clamps it, and the worker holds it for the rest (Celery's own ETA handling).
An empty receive waits through the engine's long poll (one queue) or its ``wakeups`` seam
(several queues), so a message sent by any process is delivered as soon as its commit lands;
only with ``wait_time_seconds=0`` does an empty drain wait ``polling_interval`` (a second at most).

Only sqsqlite's public API is used: ``sqsqlite.connect``, ``Database``, ``Queue``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import uuid
import warnings
import weakref
from collections import deque
from queue import Empty
from typing import Any

from kombu.exceptions import KombuError
from kombu.log import get_logger
from kombu.transport import virtual
from kombu.transport.virtual.base import UNDELIVERABLE_FMT, UndeliverableWarning
from kombu.utils.json import dumps

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite import errors
from sqsqlite.clock import SYSTEM_CLOCK, Clock, ticks

from . import acks, bindings, options
from .bindings import Binding
from .options import FIFO_SUFFIX, UndefinedQueueException, queue_name
from .payloads import delay_seconds, kombu_payload

logger = get_logger(__name__)


class UnroutableMessage(KombuError):
    """A persistent message was published to an exchange that routes its key to no queue."""


def delete(q: sqsqlite.Queue, handle: str) -> None:
    q.delete_message(handle)


def release(q: sqsqlite.Queue, handle: str) -> None:
    q.change_message_visibility(handle, 0)


def _release_at_exit(ref: weakref.ref[Channel], pid: int) -> None:
    """Give back what a channel still holds when the interpreter of the process that made it
    exits with it open. A forked process has a copy of the hook, and of the channel, but the
    messages are its parent's: it gives back nothing (as Kombu's own hook, a multiprocessing
    Finalize, runs only in its maker)."""
    channel = ref()
    if channel is None or channel.closed or os.getpid() != pid:
        return
    try:
        channel.release_buffered()
        channel.qos.restore_unacked_once()
    except Exception as exc:  # at exit there is no caller to raise to: they come back after their visibility timeout
        logger.warning("could not give back the messages an unclosed channel held at exit: %s", exc)


class Channel(virtual.Channel):
    """A Kombu channel whose queues are sqsqlite queues."""

    #: Transport options read into attributes of the same name.
    from_transport_options: tuple[str, ...] = virtual.Channel.from_transport_options + (  # type: ignore[assignment]
        "visibility_timeout",
        "wait_time_seconds",
        "queue_name_prefix",
        "queue_attributes",
        "queue_tags",
        "predefined_queues",
        "dead_letter_queue",
        "max_receive_count",
    )

    #: Seconds a received message stays leased, and the VisibilityTimeout of the queues the
    #: channel creates. None: receives take the queue's own, and the queues the channel creates
    #: get D.KOMBU_VISIBILITY_TIMEOUT (1800 s, as Kombu's SQS transport gives its queues).
    visibility_timeout: int | None = None
    #: The longest one long poll waits, 0-20 s (a drain's timeout shortens it).
    wait_time_seconds: int = D.MAX_WAIT_TIME_SECONDS
    #: Put before every queue's name.
    queue_name_prefix: str = ""
    #: SQS attributes of the queues the channel creates (e.g. ``{"MessageRetentionPeriod": 86400}``);
    #: Kombu's SQS transport's ``sqs-creation-attributes`` are added to them.
    queue_attributes: dict[str, Any] | None = None
    #: Tags of the queues the channel creates (Kombu's SQS transport's ``queue_tags``).
    queue_tags: dict[str, str] | None = None
    #: Kombu's SQS transport's: ``{"celery": {"url": ".../prod-celery"}}``. With it, a Kombu queue
    #: is the queue its URL names (created if the file lacks it), and no other queue is used.
    predefined_queues: dict[str, Any] | None = None
    #: A Kombu queue name: every queue the channel creates gets a RedrivePolicy to it.
    dead_letter_queue: str | None = None
    #: The RedrivePolicy's maxReceiveCount.
    max_receive_count: int = D.MAX_RECEIVE_COUNT_RANGE.default

    def __init__(self, connection: Any, **kwargs: Any) -> None:
        super().__init__(connection, **kwargs)  # sets the options given, as given
        self.visibility_timeout = options.optional_seconds("visibility_timeout", self.visibility_timeout, 0, D.MAX_VISIBILITY_TIMEOUT)
        self.wait_time_seconds = options.whole_seconds("wait_time_seconds", self.wait_time_seconds, 0, D.MAX_WAIT_TIME_SECONDS)
        r = D.MAX_RECEIVE_COUNT_RANGE
        self.max_receive_count = options.whole_number("max_receive_count", self.max_receive_count, r.low, r.high)
        given = connection.client.transport_options
        self.creation_attributes = {
            **options.mapping("queue_attributes", self.queue_attributes),
            **options.mapping("sqs-creation-attributes", given.get("sqs-creation-attributes")),
        }
        self.creation_tags = options.mapping("queue_tags", self.queue_tags)
        self.predefined = options.predefined_queues(self.predefined_queues)
        self.queues: dict[str, sqsqlite.Queue] = {}
        self.consuming: dict[str, str] = {}  # consumer tag -> Kombu queue name
        self.no_ack_queues: set[str] = set()
        self.rotation = 0
        # Received and not yet handed to Kombu, (payload, Kombu queue name): a drain hands over
        # one message, so a worker (the solo pool runs each task inside the drain) sees a warm
        # shutdown between any two tasks; those left are released when their consumer goes.
        self.buffer: deque[tuple[dict[str, Any], str]] = deque()
        # Messages received here more than once, for the acks of their older deliveries (acks.py).
        self.redeliveries = acks.Redeliveries()
        # A program that ends without closing its connection: Kombu gives its unacked deliveries
        # back at exit, but by then the database's own exit finalizers have closed its files
        # (made later, they run first). This one, made after the database opened, runs before
        # them and gives back those and the buffered ones, as Kombu's SQS transport leaves them
        # visible again at exit instead of hidden for the whole visibility timeout.
        weakref.finalize(self, _release_at_exit, weakref.ref(self), os.getpid())

    @property
    def db(self) -> sqsqlite.Database:
        return self.connection.db

    # -- queues --------------------------------------------------------------------------------

    def sqs_name(self, queue: str) -> str:
        if not self.predefined:
            return queue_name(self.queue_name_prefix, queue)
        key = queue_name(self.queue_name_prefix, queue)  # keyed as Kombu's SQS transport keys them
        try:
            return self.predefined[key]
        except KeyError:
            raise UndefinedQueueException(f"Queue with name {key!r} must be defined in 'predefined_queues'.") from None

    def queue(self, queue: str) -> sqsqlite.Queue:
        """The sqsqlite queue of Kombu queue ``queue``, created on first use."""
        q = self.queues.get(queue)
        if q is None:
            q = self.queues[queue] = self.ensure_queue(self.sqs_name(queue), self.redrive_policy(queue))
        return q

    def ensure_queue(self, name: str, redrive: dict[str, Any] | None) -> sqsqlite.Queue:
        with contextlib.suppress(errors.QueueDoesNotExist):
            return self.db.queue(name)
        # The creation attributes last, over visibility_timeout, as Kombu's SQS transport applies them.
        attributes: dict[str, Any] = {"VisibilityTimeout": D.KOMBU_VISIBILITY_TIMEOUT}
        if self.visibility_timeout is not None:
            attributes["VisibilityTimeout"] = self.visibility_timeout
        attributes.update(self.creation_attributes)
        if redrive is not None:
            attributes["RedrivePolicy"] = redrive
        if name.endswith(FIFO_SUFFIX):
            attributes["FifoQueue"] = "true"
        try:
            return self.db.create_queue(name, attributes, self.creation_tags)
        except errors.QueueAlreadyExists:  # another process created it first, maybe otherwise
            return self.db.queue(name)

    def redrive_policy(self, queue: str) -> dict[str, Any] | None:
        if not self.dead_letter_queue or queue == self.dead_letter_queue:
            return None
        dlq = self.ensure_queue(self.sqs_name(self.dead_letter_queue), None)
        return {"deadLetterTargetArn": dlq.arn, "maxReceiveCount": self.max_receive_count}

    def _new_queue(self, queue: str, **kwargs: Any) -> None:
        if kwargs.get("auto_delete") or kwargs.get("exclusive"):
            self.connection.passing_queues.add(queue)
        self.queue(queue)

    def _has_queue(self, queue: str, **kwargs: Any) -> bool:
        try:
            self.db.queue(self.sqs_name(queue))
        except errors.QueueDoesNotExist:
            return False
        return True

    def _delete(self, queue: str, *args: Any, **kwargs: Any) -> None:
        self.queues.pop(queue, None)
        if self.predefined:
            return  # defined elsewhere, and kept, as Kombu's SQS transport keeps them
        with contextlib.suppress(errors.QueueDoesNotExist):
            self.db.delete_queue(self.sqs_name(queue))

    def queue_delete(self, queue: str, if_unused: bool = False, if_empty: bool = False, **kwargs: Any) -> None:
        """Delete the queue, and its bindings with it (its tags), whichever process bound it:
        Kombu's own deletes once for each binding this connection holds, so from any other it
        deleted nothing and publishes kept reaching the queue."""
        try:  # looked up, not self.queue(): that would create it (and its dead-letter queue)
            q = self.db.queue(self.sqs_name(queue))
        except errors.QueueDoesNotExist:
            q = None
        if q is not None and if_empty and q.get_queue_attributes(["ApproximateNumberOfMessages"])["ApproximateNumberOfMessages"] != "0":
            return
        recorded = [] if q is None or not self.predefined else [k for k in q.list_queue_tags() if k.startswith(bindings.TAG_PREFIX)]
        if q is not None and recorded:  # a predefined queue is kept, as on Kombu's SQS transport; its bindings go
            q.untag_queue(recorded)
        self._delete(queue)
        self.state.queue_bindings_delete(queue)

    def _size(self, queue: str) -> int:
        attrs = self.queue(queue).get_queue_attributes(["ApproximateNumberOfMessages"])
        return int(attrs["ApproximateNumberOfMessages"])

    def _purge(self, queue: str) -> int:
        """Delete the messages ready now and return how many: AMQP's purge, which Celery's
        ``purge`` means; delayed and in-flight ones stay. Not PurgeQueue (it would take those
        too, and runs once a minute at most), nor receives (they would move the messages past
        maxReceiveCount to the dead-letter queue instead of deleting them)."""
        return self.queue(queue).purge_visible()

    # -- bindings (bindings.py) ----------------------------------------------------------------

    def queue_bind(self, queue: str, exchange: str | None = None, routing_key: str = "", arguments: Any = None, **kwargs: Any) -> None:
        """Bind here (Kombu's state, which its management views read), and record the binding
        as a tag of its queue, for the publishes of every process."""
        exchange = exchange or "amq.direct"
        recorded = queue not in self.connection.passing_queues
        if recorded:  # first: a binding that can't be recorded is refused before anything changes
            key, value = bindings.tag(Binding(queue, exchange, self.typeof(exchange).type, routing_key))
            q = self.queue(queue)
            tags = q.list_queue_tags()
            new = tags.get(key) != value  # read first: every worker declares it again as it starts
            if new and key not in tags and len(tags) >= D.MAX_TAGS:
                raise ValueError(
                    f"Can't bind queue {queue!r} to {exchange!r}: its bindings are kept as the queue's tags, and it has "
                    f"{len(tags)}, SQS's limit ({D.MAX_TAGS}); unbind or untag it first."
                )
        super().queue_bind(queue, exchange, routing_key, arguments, **kwargs)
        if recorded and new:
            q.tag_queue({key: value})

    def queue_unbind(self, queue: str, exchange: str | None = None, routing_key: str = "", arguments: Any = None, **kwargs: Any) -> None:
        super().queue_unbind(queue, exchange, routing_key, arguments, **kwargs)
        key, _ = bindings.tag(Binding(queue, exchange or "amq.direct", "", routing_key))
        try:  # not self.queue(): it would create a queue missing from the file
            q = self.db.queue(self.sqs_name(queue))
            if key in q.list_queue_tags():
                q.untag_queue([key])
        except errors.QueueDoesNotExist:
            pass  # deleted meanwhile, and its bindings with it

    def recorded_bindings(self, exchange: str) -> list[Binding]:
        """The bindings to ``exchange`` the file records, of the queues this channel's names reach."""
        found = []
        for name, tags in self.db.queue_tags().items():
            for b in bindings.read(tags):
                if b.exchange != exchange:
                    continue
                try:
                    ours = self.sqs_name(b.queue) == name
                except UndefinedQueueException:
                    ours = False
                if ours:  # not another prefix's queue that happens to have this one's name
                    found.append(b)
        return found

    def _lookup(self, exchange: str, routing_key: str, default: str | None = None) -> list[str]:
        """The queues a message to ``exchange`` with ``routing_key`` goes to: those the file's
        bindings route it to, whichever process declared them (the file is the truth: a queue
        another process deleted took its bindings with it), and the auto-delete queues this
        connection bound; else ``[default]`` (Kombu's ``deadletter_queue`` option), else none."""
        if not exchange:  # the default exchange: the routing key names the queue
            return super()._lookup(exchange, routing_key, default)
        passing = self.connection.passing_queues
        local = [Binding(q, exchange, self.typeof(exchange).type, key) for key, _, q in self.local_table(exchange) if q in passing]
        queues = bindings.route(local + self.recorded_bindings(exchange), self.exchange_types, exchange, routing_key)
        if queues:
            return sorted(queues)
        default = default or self.deadletter_queue
        if default is None:
            return []
        warnings.warn(UndeliverableWarning(UNDELIVERABLE_FMT.format(exchange=exchange, routing_key=routing_key)), stacklevel=2)
        return [default]

    def local_table(self, exchange: str) -> list[tuple[str, Any, str]]:
        try:
            return list(self.get_table(exchange))
        except KeyError:  # not declared in this process
            return []

    # -- publishing ----------------------------------------------------------------------------

    def basic_publish(self, message: dict[str, Any], exchange: str, routing_key: str, **kwargs: Any) -> None:
        """Publish to the queues the exchange routes ``routing_key`` to (_lookup). A message no
        queue is bound for raises UnroutableMessage rather than vanish; a transient one
        (delivery_mode 1, as Celery's monitoring events are sent) is dropped, as a broker drops
        it when no monitor listens."""
        if not exchange:
            return super().basic_publish(message, exchange, routing_key, **kwargs)
        # What Kombu's own basic_publish does to a message before it routes it.
        message["body"], encoding = self.encode_body(message["body"], self.body_encoding)
        message["properties"].update(body_encoding=encoding, delivery_tag=str(uuid.uuid4()))
        message["properties"]["delivery_info"].update(exchange=exchange, routing_key=routing_key)
        queues = self._lookup(exchange, routing_key)
        if not queues:
            if (message.get("properties") or {}).get("delivery_mode") == 1:
                logger.debug("a transient message to exchange %r with routing key %r: no queue is bound for it", exchange, routing_key)
                return None
            if exchange.endswith(".pidbox"):  # Celery's remote control: no worker here listens on it
                raise UnroutableMessage(
                    f"Celery's remote control (celery inspect, control, status) does not work on this transport: no worker "
                    f"declares its {exchange!r} queue, as the transport offers no fanout exchange; the message was not sent"
                )
            raise UnroutableMessage(
                f"no queue is bound to exchange {exchange!r} for routing key {routing_key!r}, in any process "
                "(an auto-delete or exclusive queue's bindings are known only to the process that declared it): "
                "the message was not sent. Declare the queue and its binding first (a worker does when it starts), "
                "or set the deadletter_queue transport option to keep such messages"
            )
        for queue in queues:
            self._put(queue, message, **kwargs)
        return None

    def _put(self, queue: str, message: dict[str, Any], **kwargs: Any) -> None:
        q = self.queue(queue)
        delay = delay_seconds(message, self.db.now())
        body = dumps(message)
        props = message.get("properties") or {}
        if q.fifo:
            if delay:
                logger.warning("a FIFO queue takes no per-message delay: %s s ignored", delay)
            q.send_message(
                body,
                message_group_id=props.get("MessageGroupId", "default"),
                message_deduplication_id=props.get("MessageDeduplicationId") or uuid.uuid4().hex,
            )
        else:
            # A standard queue's message group is its fair-queueing tenant (docs/explanation/fair-queues.md);
            # Kombu's SQS transport sends it too.
            q.send_message(body, delay_seconds=delay, message_group_id=props.get("MessageGroupId"))

    # -- consuming -----------------------------------------------------------------------------

    def basic_consume(self, queue: str, no_ack: bool, callback: Any, consumer_tag: str, **kwargs: Any) -> Any:
        self.queue(queue)
        self.consuming[consumer_tag] = queue
        if no_ack:
            self.no_ack_queues.add(queue)
        return super().basic_consume(queue, no_ack, callback, consumer_tag, **kwargs)

    def basic_cancel(self, consumer_tag: str) -> Any:
        queue = self.consuming.pop(consumer_tag, None)
        if queue is not None and queue not in self.consuming.values():
            self.release_buffered(queue)
            self.no_ack_queues.discard(queue)
        return super().basic_cancel(consumer_tag)

    def release_buffered(self, queue: str | None = None) -> None:
        """Make the buffered messages (of ``queue``, or all) visible again at once: received,
        but never handed to Kombu, so no worker has started them."""
        kept: deque[tuple[dict[str, Any], str]] = deque()
        handles: dict[str, list[str]] = {}
        for payload, name in self.buffer:
            if queue is None or name == queue:
                handles.setdefault(name, []).append(payload["properties"]["delivery_tag"])
            else:
                kept.append((payload, name))
        self.buffer = kept
        for name, tags in handles.items():
            q = self.queue(name)
            for start in range(0, len(tags), D.MAX_BATCH_ENTRIES):
                entries = [
                    {"Id": str(i), "ReceiptHandle": tag, "VisibilityTimeout": 0}
                    for i, tag in enumerate(tags[start : start + D.MAX_BATCH_ENTRIES])
                ]
                try:
                    failed = q.change_message_visibility_batch(entries).failed
                except errors.QueueDoesNotExist as err:
                    logger.warning("could not release %d received message(s) of %s: %s", len(tags), q.name, err)
                    break
                for entry in failed:  # gone meanwhile (its lease ended, and another took it)
                    logger.warning("could not release a received message of %s: %s", q.name, entry.message)

    def close(self) -> None:
        if not self.closed:
            self.release_buffered()  # cancelling the consumers releases theirs; this, any left
        super().close()

    def receive(self, queue: str, count: int, wait: int = 0) -> list[dict[str, Any]]:
        """Up to ``count`` messages of ``queue`` as Kombu payloads, long-polling ``wait`` s."""
        q = self.queue(queue)
        messages = q.receive_message(max_number_of_messages=count, wait_time_seconds=wait, visibility_timeout=self.visibility_timeout)
        payloads = []
        for m in messages:
            payload = kombu_payload(m.body)
            props = payload["properties"]
            tag: str = m.receipt_handle  # type: ignore[assignment]  # received: a handle
            props["delivery_tag"] = tag
            if self.redeliveries.received(m.message_id, tag):
                # Acked here while it came back (acks.py): deleted now; the copy handed over runs again.
                self.settle((q, tag), delete, "ack")
            info = props.setdefault("delivery_info", {})
            info["sqsqlite_queue"] = queue
            info["sqsqlite_message_id"] = m.message_id
            # Kombu's Message and Celery read it from delivery_info: the message was received
            # before and came back (released, or its visibility timeout ended).
            info["redelivered"] = m.receive_count > 1
            payloads.append(payload)
        return payloads

    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        payloads = self.receive(queue, 1)
        if not payloads:
            raise Empty()
        return payloads[0]

    def basic_get(self, queue: str, no_ack: bool = False, **kwargs: Any) -> Any:
        message = super().basic_get(queue, no_ack=no_ack, **kwargs)
        if message is not None and no_ack:
            self.settle((self.queue(queue), message.delivery_tag), delete, "ack")
        return message

    def batch_size(self) -> int:
        room = self.qos.can_consume_max_estimate()  # None: no prefetch limit
        return D.MAX_MESSAGES_PER_RECEIVE if room is None else max(1, min(room, D.MAX_MESSAGES_PER_RECEIVE))

    def drain_events(self, timeout: float | None = None, callback: Any = None) -> None:
        """Deliver one message to ``callback``: the next one buffered, else the first of a
        receive of as many as the prefetch allows (the rest buffered); Empty when there were
        none within ``timeout`` seconds (None: the longest long poll)."""
        queues = list(dict.fromkeys(self.consuming.values()))
        if not queues or not self.qos.can_consume():
            raise Empty()
        deliver = callback or self.connection.deliver
        if self.buffer:
            return self.hand_over(*self.buffer.popleft(), deliver)
        count = self.batch_size()
        # wait_time_seconds=0 (short receives, as on SQS) still waits between empty turns, as
        # Kombu's SQS transport then waits polling_interval: up to that (a second at most,
        # below) for a commit, not a busy loop of receives.
        longest = self.wait_time_seconds or self.connection.polling_interval
        wait = longest if timeout is None else min(longest, timeout)
        if len(queues) == 1 and wait >= 1 and self.wait_time_seconds:
            # The engine's long poll: it claims at once what is there, and otherwise wakes on a
            # commit to the queue by any process, or when a delayed or leased message becomes
            # visible.
            payloads = self.receive(queues[0], count, int(wait))
            if payloads:
                return self.take(payloads, queues[0], deliver)
            raise Empty()
        # Several queues (or under a second to wait): one turn over them without waiting, the
        # first one moving each call so no queue starves the others; then a wait for any commit
        # through the engine's wakeups seam, a second at most so a delay ending in any of them
        # is seen.
        start = self.rotation = (self.rotation + 1) % len(queues)
        order = queues[start:] + queues[:start]
        name = self.sqs_name(order[0])
        mark = self.db.wakeups.mark(self.db.queue_key(name))
        for queue in order:
            payloads = self.receive(queue, count)
            if payloads:
                return self.take(payloads, queue, deliver)
        if wait > 0:
            until = self.db.now() + int(min(wait, 1.0) * 1000)
            self.db.wakeups.wait(self.db.queue_key(name), mark, until, until)
        raise Empty()

    def take(self, payloads: list[dict[str, Any]], queue: str, deliver: Any) -> None:
        self.buffer.extend((payload, queue) for payload in payloads[1:])
        self.hand_over(payloads[0], queue, deliver)

    def hand_over(self, payload: dict[str, Any], queue: str, deliver: Any) -> None:
        if queue in self.no_ack_queues:
            # Deleted as it is handed over, not when received: a buffered message released at
            # a close must still be there.
            self.settle((self.queue(queue), payload["properties"]["delivery_tag"]), delete, "ack")
        deliver(payload, queue)

    # -- acknowledging -------------------------------------------------------------------------

    def delivered(self, delivery_tag: str) -> tuple[sqsqlite.Queue, str] | None:
        try:
            message = self.qos.get(delivery_tag)
        except KeyError:
            return None
        queue = (message.delivery_info or {}).get("sqsqlite_queue")
        return None if queue is None else (self.queue(queue), delivery_tag)

    def basic_ack(self, delivery_tag: str, multiple: bool = False) -> None:
        """Delete the message. If its lease ended and this channel has received it again since (a
        task longer than the visibility timeout, under acks_late, came back to this worker), the
        older handle can't delete it (sqsqlite's rule: only the newest handle acts on a message);
        it is deleted with the newer one, so the task runs twice, as on SQS, not once a lease until
        it is dead-lettered (acks.py, also for an ack that crosses that receive). The newer
        delivery's own ack then finds it deleted, which succeeds."""
        found = self.delivered(delivery_tag)
        try:
            if found is not None:
                message_id = (self.qos.get(delivery_tag).delivery_info or {}).get("sqsqlite_message_id")
                self.settle(found, functools.partial(acks.ack, self.redeliveries, message_id), "ack")
        finally:
            super().basic_ack(delivery_tag)

    def basic_reject(self, delivery_tag: str, requeue: bool = False) -> None:
        """Requeue: release the message, visible again at once. Otherwise delete it, unless its
        queue has a dead-letter queue: then it comes back after its visibility timeout until its
        receives pass maxReceiveCount, and then goes to the dead-letter queue."""
        found = self.delivered(delivery_tag)
        try:
            if found is not None:
                if requeue:
                    self.settle(found, release, "release")
                elif not self.has_redrive_policy(found[0]):
                    self.settle(found, delete, "reject")
        finally:
            # Settled here: the base class would requeue by publishing a copy.
            super().basic_reject(delivery_tag, requeue=False)

    def _restore(self, message: Any) -> None:
        """An unacknowledged delivery when the channel closes: released, visible again at once."""
        queue = (message.delivery_info or {}).get("sqsqlite_queue")
        if queue is not None:
            self.settle((self.queue(queue), message.delivery_tag), release, "release")

    def settle(self, found: tuple[sqsqlite.Queue, str], action: Any, verb: str) -> None:
        q, handle = found
        try:
            action(q, handle)
        except (errors.ReceiptHandleIsInvalid, errors.MessageNotInflight, errors.InvalidParameterValue, errors.QueueDoesNotExist) as err:
            # The lease ended and another consumer received the message, and maybe deleted it
            # (a release of a message that is gone is InvalidParameterValue: the handles here
            # are the engine's own, so nothing else about them can be invalid), or it expired,
            # or its queue was deleted. Whoever holds it now settles it; there is nothing left
            # to do here, and raising would stop a worker (or, at a channel's close, dump it
            # as unrestorable). An ack lost so is a duplicate delivery, as SQS allows.
            logger.warning("could not %s a message of %s: %s", verb, q.name, err)

    def has_redrive_policy(self, q: sqsqlite.Queue) -> bool:
        return "RedrivePolicy" in q.get_queue_attributes(["RedrivePolicy"])


class Transport(virtual.Transport):
    """``sqsqlite:///path/to/file.db`` (SQLAlchemy's convention: three slashes and a relative
    path, four for an absolute one; ``sqsqlite://`` alone: ``$SQSQLITE_DB`` or ./sqsqlite.db).
    Transport options: see :class:`Channel`, and ``clock`` (a sqsqlite clock, for tests)."""

    Channel = Channel

    #: Kombu leaves the URL to the transport (a file path is not a host).
    can_parse_url = True
    driver_type = "sqsqlite"
    driver_name = "sqsqlite"
    default_port = None

    implements = virtual.Transport.implements.extend(
        asynchronous=False,
        exchange_type=frozenset(["direct", "topic"]),
        heartbeats=False,
    )

    connection_errors: tuple[type[BaseException], ...] = virtual.Transport.connection_errors + (errors.DatabaseError,)  # type: ignore[assignment]

    def __init__(self, client: Any, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)
        # Kombu takes the option as given; read as a number here, not a TypeError in a drain.
        self.polling_interval = options.interval("polling_interval", self.polling_interval)
        self.database: sqsqlite.Database | None = None
        # Auto-delete and exclusive queues declared on this connection (Celery's event
        # receivers, for one): their bindings stay here, as Kombu keeps every binding, and are
        # not written to the file. Such a queue is meant to go with its process; here it stays
        # in the file, and a binding recorded there would route messages into it for good
        # once its process is gone.
        self.passing_queues: set[str] = set()
        # Every wait and deadline reads the database's clock, so a test's ManualClock moves
        # them all (a long poll then advances it instead of sleeping).
        self.conninfo = client
        self.clock: Clock = client.transport_options.get("clock") or SYSTEM_CLOCK

    @property
    def db(self) -> sqsqlite.Database:
        if self.database is None:
            self.database = sqsqlite.connect(database_path(self.conninfo.hostname), clock=self.clock)
        return self.database

    def establish_connection(self) -> Any:
        self.db  # noqa: B018 - opens (creating and migrating) the file now, so a bad path fails here
        return super().establish_connection()

    def close_connection(self, connection: Any) -> None:
        try:
            super().close_connection(connection)
        finally:
            if self.database is not None:
                self.database.close()
                self.database = None

    def deliver(self, payload: dict[str, Any], queue: str) -> None:
        self.on_message_ready(None, payload, queue)

    def drain_events(self, connection: Any, timeout: float | None = None, **kwargs: Any) -> None:
        """Deliver one receive's messages, or raise socket.timeout after one long poll found
        none (of up to ``wait_time_seconds``, or ``timeout`` if shorter; with no timeout, poll
        again). Channels wait through the engine (``polling_interval`` counts only with
        ``wait_time_seconds=0``); only while
        every channel's prefetch is full is it looked at again every few milliseconds."""
        tick, cycle = ticks(self.clock), self.cycle
        assert cycle is not None  # made by the constructor
        deadline = None if timeout is None else tick() + timeout * 1000
        while True:
            remaining = None if deadline is None else max(0.0, (deadline - tick()) / 1000)
            with contextlib.suppress(Empty):
                cycle.get(self.deliver, timeout=remaining)
                return
            waited = any(c.consuming and c.qos.can_consume() for c in self.channels)
            if deadline is not None and (waited or tick() >= deadline):
                # Returning after the long poll rather than at the deadline lets a caller such as
                # Celery's worker loop see a shutdown within wait_time_seconds.
                raise TimeoutError()  # socket.timeout, which Kombu's callers catch
            if not waited:
                # Nothing to wait for in the database: room comes from acks in this process.
                self.clock.sleep(D.LONG_POLL_MAX_INTERVAL if remaining is None else min(D.LONG_POLL_MAX_INTERVAL, remaining))

    @property
    def default_connection_params(self) -> dict[str, Any]:
        return {"port": None, "hostname": "sqsqlite://"}


def database_path(url: str | None) -> str | None:
    """The file a ``sqsqlite://`` URL names (None: sqsqlite's default)."""
    if not url:
        return None
    _, sep, rest = url.partition("://")
    path = rest if sep else url
    if sep and path:
        if not path.startswith("/"):
            raise ValueError(f"{url!r}: expected sqsqlite:///relative/path.db or sqsqlite:////absolute/path.db")
        path = path[1:]
    path = path.split("?", 1)[0]
    return os.path.expanduser(path) or None


__all__ = ["Channel", "Transport", "UndefinedQueueException", "UnroutableMessage", "database_path", "delay_seconds", "queue_name"]
