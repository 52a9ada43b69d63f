"""What a Kombu message carries through a queue: the payload read back from a body (Kombu's,
or another program's message wrapped as Kombu's SQS transport wraps one) and the delay a
published message asks for."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from kombu.log import get_logger
from kombu.utils.json import loads

from sqsqlite import defaults as D

logger = get_logger(__name__)


def kombu_payload(body: str) -> dict[str, Any]:
    """A received body as a Kombu payload: what Kombu published, or a message another program
    sent to the queue (not JSON, or JSON without Kombu's properties) wrapped as Kombu's SQS
    transport wraps one: its text as the body, for the consumer to handle or reject. Raising
    instead stopped a Celery worker, and every restart, at the first such message."""
    try:
        payload = loads(body)
    except (ValueError, TypeError, RecursionError):
        payload = None
    if not isinstance(payload, dict) or not isinstance(payload.get("properties"), dict):
        payload = {"body": body, "properties": {"delivery_info": {}}}
    return payload


def delay_seconds(message: dict[str, Any], now_ms: int) -> int | None:
    """The DelaySeconds a published Kombu message asks for: an explicit ``delay_seconds`` (or
    ``DelaySeconds``) property, else Celery's ``eta`` header, as whole seconds from ``now_ms``
    (rounded down: the worker holds an early message until its ETA, it never runs one late),
    capped at SQS's 900. None: no delay."""
    props = message.get("properties") or {}
    for key in ("delay_seconds", "DelaySeconds"):
        if props.get(key) is not None:
            try:
                seconds = float(props[key])
            except (TypeError, ValueError):
                logger.warning("delay %r is not a number: sent without a delay", props[key])
                return None
            return _capped(seconds)
    eta = (message.get("headers") or {}).get("eta")
    if not eta:
        return None
    try:
        when = datetime.fromisoformat(eta)
    except (TypeError, ValueError):
        return None  # not Celery's: the worker reads it, or not, as it would on any broker
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)  # Celery writes naive ETAs in UTC
    return _capped(when.timestamp() - now_ms / 1000)


def _capped(seconds: float) -> int | None:
    if not seconds > 0:
        return None
    if seconds > D.MAX_DELAY_SECONDS:
        logger.info(
            "delay of %.0f s is over SQS's %d s: sent with %d s, the worker holds it for the rest",
            seconds,
            D.MAX_DELAY_SECONDS,
            D.MAX_DELAY_SECONDS,
        )
        return D.MAX_DELAY_SECONDS
    return int(seconds)
