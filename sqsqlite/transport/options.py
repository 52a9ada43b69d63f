"""The transport's options, read as Kombu's SQS transport reads the same ones, checked once when
a channel opens: a bad value is a ValueError naming the option there, not a TypeError in a
worker's drain later; and the SQS names of Kombu's queues.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

# SQS queue names take letters, digits, "-" and "_": Kombu's names often have dots ("celery.pidbox",
# "a.b.c"), and its SQS transport maps "." to "-" and other punctuation to "_"; so does this one, so
# queue names come out the same on both.
_NAME_TABLE = {ord(c): ord("_") for c in string.punctuation if c not in "-_."}
_NAME_TABLE[ord(".")] = ord("-")
FIFO_SUFFIX = ".fifo"

#: predefined_queues settings that change what Kombu's SQS transport does with a queue and that
#: this one doesn't do: refused, so a configuration that relies on them is not run without them.
#: (Credentials and regions are ignored: a file has none.)
UNSUPPORTED_QUEUE_SETTINGS = ("backoff_policy", "backoff_tasks")


class UndefinedQueueException(ValueError):
    """A queue not in ``predefined_queues`` was used (the name Kombu's SQS transport gives this error)."""


def queue_name(prefix: str, name: str) -> str:
    """The SQS name of Kombu queue ``name``: ``prefix`` + the name, made SQS-safe together, as
    Kombu's SQS transport makes it (a prefix such as "prod." gives "prod-celery" on both)."""
    whole = prefix + name
    if whole.endswith(FIFO_SUFFIX):
        return whole[: -len(FIFO_SUFFIX)].translate(_NAME_TABLE) + FIFO_SUFFIX
    return whole.translate(_NAME_TABLE)


def whole_seconds(option: str, value: Any, low: int, high: int) -> int:
    """A number of seconds given as Kombu's SQS transport takes it (``int(float(value))``: "60",
    60.5 and 60 are 60), within ``low``..``high``."""
    try:
        seconds = int(float(value))
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"transport option {option}={value!r}: expected a number of seconds from {low} to {high}") from None
    if not low <= seconds <= high:
        raise ValueError(f"transport option {option}={value!r}: expected a number of seconds from {low} to {high}")
    return seconds


def interval(option: str, value: Any) -> float:
    """A number of seconds, fractions taken (Kombu's ``polling_interval``): "0.5" is 0.5."""
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"transport option {option}={value!r}: expected a number of seconds, 0 or more")
    return seconds


def optional_seconds(option: str, value: Any, low: int, high: int) -> int | None:
    """``whole_seconds``, or None when the option is absent (None or "", as Kombu's SQS reads it)."""
    return None if value is None or value == "" else whole_seconds(option, value, low, high)


def whole_number(option: str, value: Any, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        number = None
    if number is None or not low <= number <= high:
        raise ValueError(f"transport option {option}={value!r}: expected a whole number from {low} to {high}")
    return number


def mapping(option: str, value: Any) -> dict[str, Any]:
    """A mapping option (queue attributes, tags): the engine checks its entries when it creates a
    queue, and refuses a bad one with SQS's error."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"transport option {option}={value!r}: expected a mapping")
    return dict(value)


def predefined_queues(value: Any) -> dict[str, str]:
    """Kombu queue name -> SQS queue name, from Kombu's SQS transport's ``{"name": {"url":
    "https://.../name", ...}}``: a URL's last part names the queue in the file, whatever its
    endpoint, so a configuration written for Amazon SQS works as it is."""
    names: dict[str, str] = {}
    for queue, settings in mapping("predefined_queues", value).items():
        url = settings.get("url") if isinstance(settings, Mapping) else None
        if not isinstance(queue, str) or not isinstance(url, str) or not url.strip("/"):
            raise ValueError(f"transport option predefined_queues[{queue!r}]: expected a mapping with the queue's 'url'")
        unsupported = [key for key in UNSUPPORTED_QUEUE_SETTINGS if key in settings]
        if unsupported:
            raise ValueError(
                f"transport option predefined_queues[{queue!r}] sets {' and '.join(unsupported)}, which the sqsqlite transport "
                "does not support (a task's retry countdown, or the dead_letter_queue and max_receive_count options, instead)"
            )
        name = url.rstrip("/").rsplit("/", 1)[-1]
        if name.endswith(FIFO_SUFFIX) != queue.endswith(FIFO_SUFFIX):
            raise ValueError(f"transport option predefined_queues[{queue!r}]: the name and the URL both end in .fifo, or neither ({url!r})")
        names[queue] = name
    return names


__all__ = [
    "FIFO_SUFFIX",
    "UndefinedQueueException",
    "interval",
    "mapping",
    "optional_seconds",
    "predefined_queues",
    "queue_name",
    "whole_number",
    "whole_seconds",
]
