"""Kombu's bindings kept in the file, so that every process routes by the bindings any process
declared.

Kombu's in-memory and SQLAlchemy transports (and its virtual base) keep exchanges and bindings in
the memory of the process (of the connection, even) that declared them: a producer publishing to an exchange whose queues a worker
bound in another process found no binding, and the message went nowhere. Here each binding is
also a tag of its queue, written when the binding is declared and gone with the queue, and a
publish to an exchange routes by the bindings the file holds then. A queue's tags need no schema
of their own, and every sqsqlite tool shows them (``sqsqlite list-queue-tags``).

A tag is ``kombu-binding:<digest of queue, exchange and routing key>`` =
base64(JSON ``[queue, exchange, exchange type, routing key]``): the Kombu queue's own name (its
SQS name has lost its dots), and the type the exchange was declared with, which says how the
binding's routing key matches. Tag keys and values take letters, digits and ``_ . : / = + - @``
only, hence base64 (whose alphabet is those), and a value at most 256 characters long: a binding
whose names don't fit is refused when it is declared.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from sqsqlite import defaults as D

TAG_PREFIX = "kombu-binding:"


class Binding(NamedTuple):
    queue: str  # the Kombu queue's name
    exchange: str
    type: str  # the exchange's type: direct, topic or fanout
    routing_key: str


def tag(binding: Binding) -> tuple[str, str]:
    """The queue tag (key, value) that records ``binding``; ValueError if it can't fit."""
    digest = hashlib.sha256("\0".join((binding.queue, binding.exchange, binding.routing_key)).encode()).hexdigest()[:32]
    value = base64.b64encode(json.dumps(list(binding), separators=(",", ":")).encode()).decode()
    if len(value) > D.MAX_TAG_VALUE_LENGTH:
        raise ValueError(
            f"the binding of queue {binding.queue!r} to exchange {binding.exchange!r} with routing key {binding.routing_key!r} "
            f"is too long to record in the file ({len(value)} characters encoded, {D.MAX_TAG_VALUE_LENGTH} at most): "
            "use shorter names"
        )
    return TAG_PREFIX + digest, value


def read(tags: Mapping[str, str]) -> list[Binding]:
    """The bindings a queue's tags record (a tag that isn't one is not read)."""
    found = []
    for key, value in tags.items():
        if key.startswith(TAG_PREFIX):
            binding = decode(value)
            if binding is not None:
                found.append(binding)
    return found


@functools.lru_cache(maxsize=4096)
def decode(value: str) -> Binding | None:
    """A tag's binding. Cached: every publish to an exchange reads every binding in the file,
    the same ones again and again (decoding them all was most of such a publish's time)."""
    try:
        fields = json.loads(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return None
    if isinstance(fields, list) and len(fields) == len(Binding._fields) and all(isinstance(f, str) for f in fields):
        return Binding(*fields)
    return None


def route(found: Iterable[Binding], exchange_types: Mapping[str, Any], exchange: str, routing_key: str) -> set[str]:
    """The Kombu queues a message published to ``exchange`` with ``routing_key`` goes to: each
    binding matched as Kombu's exchange type of its own matches (``exchange_types``, a virtual
    channel's: direct, topic, fanout)."""
    queues: set[str] = set()
    for b in found:
        kind = exchange_types.get(b.type)
        if b.exchange != exchange or kind is None:
            continue
        queues |= set(kind.lookup([kind.prepare_bind(b.queue, exchange, b.routing_key, None)], exchange, routing_key, None))
    return queues


__all__ = ["TAG_PREFIX", "Binding", "decode", "read", "route", "tag"]
