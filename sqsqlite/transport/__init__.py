"""Kombu's ``sqsqlite://`` transport, so Celery and Kombu use a sqsqlite file as their broker.

``Celery(broker="sqsqlite:///queue.db")`` works with nothing else running and nothing else
imported: see :mod:`sqsqlite.transport.channel` for the transport and docs/howto/celery.md for its
options.

Kombu finds a transport by the URL's scheme in its own table, ``kombu.transport.TRANSPORT_ALIASES``,
and reads no entry points for transports. It does load the entry points of the group
``kombu.serializers`` when ``kombu.serialization`` is first imported, which Celery does on
``import celery``: sqsqlite's entry point in that group names :data:`ENTRY_POINT`, and loading it
imports this module, which adds the ``sqsqlite`` alias. The serializer it registers has neither
an encoder nor a decoder, so it can't be chosen for a message. A program that uses Kombu without
Celery imports this module itself (``import sqsqlite.transport``) or names the class:
``Connection("sqsqlite:///queue.db", transport="sqsqlite.transport.channel:Transport")``.
"""

from __future__ import annotations

from kombu.transport import TRANSPORT_ALIASES

#: The Kombu transport's import path: the alias ``sqsqlite`` resolves to it.
TRANSPORT = "sqsqlite.transport.channel:Transport"

#: What the ``kombu.serializers`` entry point hands ``kombu.serialization.register`` after the
#: name: no encoder, no decoder, a content type no message carries.
ENTRY_POINT = (None, None, "application/x-sqsqlite-transport")


def register() -> None:
    """Add ``sqsqlite`` to Kombu's transport aliases (done on import; idempotent)."""
    TRANSPORT_ALIASES.setdefault("sqsqlite", TRANSPORT)


register()
