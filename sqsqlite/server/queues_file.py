"""Queues declared in a file, applied to a database: ``sqsqlite serve --queues FILE`` and
``sqsqlite apply-queues FILE``.

Three spellings of one declaration: YAML or JSON (``queues:`` a list of queues, each with SQS's
own attribute names, ``tags`` and ``deadLetterQueue: {name, maxReceiveCount}``), and ElasticMQ's
``elasticmq.conf`` (HOCON), whose ``queues { }`` block is read key by key (``ELASTICMQ_KEYS``).

The whole file is read and checked before anything is written: a file with one mistake is one
:class:`QueuesFileError` naming the queue and the key, and the database is left as it was.
Applying is idempotent: a missing queue is created, an existing one gets the attributes and tags
the file gives (never dropped, its messages kept), and a queue the file does not list is left as
it is. Dead-letter queues are named, and may come later in the file than the queues using them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .. import defaults as D
from .. import validation as V
from ..core.database import Database
from ..errors import SQSError

# The HOCON library, an optional extra: only ElasticMQ's files need it.
HOCON_EXTRA = "sqsqlite[elasticmq]"

# ElasticMQ's queue keys and the SQS attribute each one sets (durations in seconds).
ELASTICMQ_DURATIONS = {
    "defaultVisibilityTimeout": "VisibilityTimeout",
    "delay": "DelaySeconds",
    "receiveMessageWait": "ReceiveMessageWaitTimeSeconds",
}
ELASTICMQ_FLAGS = {"fifo": "FifoQueue", "contentBasedDeduplication": "ContentBasedDeduplication"}
# Keys ElasticMQ has that SQS has no meaning for: refused by name, never dropped silently.
ELASTICMQ_REFUSED = {
    "copyTo": "ElasticMQ copies every message sent to the queue into another queue; SQS has no such attribute",
    "moveTo": "ElasticMQ sends every message for the queue to another queue instead; SQS has no such attribute",
}
ELASTICMQ_KEYS = (*ELASTICMQ_DURATIONS, *ELASTICMQ_FLAGS, "deadLettersQueue", "tags", *ELASTICMQ_REFUSED)

_QUEUE_KEYS = ("name", "attributes", "tags", "deadLetterQueue")
_DLQ_KEYS = ("name", "maxReceiveCount")
# include classpath("application.conf"), which every ElasticMQ file starts with, names ElasticMQ's
# own defaults inside its jar: nothing to read here.
_CLASSPATH_INCLUDE = re.compile(r"^\s*include\s+(required\()?classpath\([^)]*\)\)?\s*$", re.MULTILINE)


class QueuesFileError(ValueError):
    """A queues file that can't be applied: the file, the queue and the key, and why."""


@dataclass
class QueueSpec:
    """One queue as the file declares it: SQS attribute strings, tags (None: left as they are)
    and its dead-letter queue by name."""

    name: str
    attributes: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] | None = None
    dead_letter: tuple[str, int] | None = None


def read_queues_file(path: str | Path) -> list[QueueSpec]:
    """The queues a file declares, checked; QueuesFileError for the first mistake."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise QueuesFileError(f"{path}: can't read it ({exc.strerror or exc}).") from None
    except UnicodeDecodeError:
        raise QueuesFileError(f"{path}: not UTF-8 text.") from None
    if path.suffix.lower() in (".conf", ".hocon"):
        return _elasticmq(path, text)
    return _declared(path, _yaml_or_json(path, text))


def _yaml_or_json(path: Path, text: str) -> Any:
    import yaml

    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise QueuesFileError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None
    try:
        return yaml.safe_load(text)  # JSON is YAML too
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise QueuesFileError(f"{path}: not YAML{where}: {getattr(exc, 'problem', None) or exc}.") from None


def _declared(path: Path, data: Any) -> list[QueueSpec]:
    if not isinstance(data, dict) or set(data) != {"queues"} or not isinstance(data["queues"], list):
        raise QueuesFileError(f"{path}: expected one key, queues, holding a list of queues (each with a name).")
    specs = []
    for i, entry in enumerate(data["queues"], 1):
        where = f"{path}: queue {i}"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise QueuesFileError(f"{where}: expected a map with a name (and attributes, tags, deadLetterQueue).")
        name = entry["name"]
        where = f"{path}: queue {name!r}"
        unknown = [k for k in entry if k not in _QUEUE_KEYS]
        if unknown:
            raise QueuesFileError(f"{where}: unknown key {unknown[0]!r}; a queue takes {', '.join(_QUEUE_KEYS)}.")
        attributes = entry.get("attributes") or {}
        if not isinstance(attributes, dict):
            raise QueuesFileError(f"{where}: attributes: expected a map of SQS attribute names to values.")
        dead_letter = None
        if entry.get("deadLetterQueue") is not None:
            dlq = entry["deadLetterQueue"]
            if not isinstance(dlq, dict) or set(dlq) != set(_DLQ_KEYS):
                raise QueuesFileError(f"{where}: deadLetterQueue: expected a map of name and maxReceiveCount.")
            dead_letter = (dlq["name"], dlq["maxReceiveCount"])
        specs.append(_spec(where, name, attributes, entry.get("tags"), dead_letter))
    return _checked(path, specs)


def _elasticmq(path: Path, text: str) -> list[QueueSpec]:
    try:
        from pyhocon import ConfigFactory, ConfigTree
    except ImportError:
        raise QueuesFileError(
            f"{path}: reading ElasticMQ's HOCON needs pyhocon, which is not installed: pip install '{HOCON_EXTRA}'."
        ) from None
    try:
        config = ConfigFactory.parse_string(_CLASSPATH_INCLUDE.sub("", text), resolve=True)
    except Exception as exc:  # pyparsing's and pyhocon's own errors, which share no base class
        raise QueuesFileError(f"{path}: not HOCON: {str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__}.") from None
    queues = config.get("queues", None)
    if queues is None:
        raise QueuesFileError(f"{path}: no queues {{ }} block.")
    if not isinstance(queues, ConfigTree):
        raise QueuesFileError(f"{path}: queues: expected a block of queues, each name {{ keys }}.")
    specs = []
    for key, body in queues.items():
        name = key[1:-1] if len(key) > 1 and key[0] == key[-1] == '"' else key  # "name.fifo" keeps its quotes
        where = f"{path}: queue {name!r}"
        if not isinstance(body, ConfigTree):
            raise QueuesFileError(f"{where}: expected a block {{ ... }} of the queue's keys.")
        attributes: dict[str, Any] = {}
        tags = None
        dead_letter = None
        for k, value in body.items():
            if k in ELASTICMQ_REFUSED:
                raise QueuesFileError(f"{where}: key {k!r} has no SQS meaning ({ELASTICMQ_REFUSED[k]}); remove it.")
            if k in ELASTICMQ_DURATIONS:
                attributes[ELASTICMQ_DURATIONS[k]] = _seconds(f"{where}: {k}", value)
            elif k in ELASTICMQ_FLAGS:
                if not isinstance(value, bool):
                    raise QueuesFileError(f"{where}: {k}: expected true or false, not {V.shorten(value)}.")
                attributes[ELASTICMQ_FLAGS[k]] = value
            elif k == "deadLettersQueue":
                if not isinstance(value, ConfigTree) or set(value) != set(_DLQ_KEYS):
                    raise QueuesFileError(f"{where}: deadLettersQueue: expected {{ name = ..., maxReceiveCount = ... }}.")
                dead_letter = (value["name"], value["maxReceiveCount"])
            elif k == "tags":
                if not isinstance(value, ConfigTree):
                    raise QueuesFileError(f"{where}: tags: expected a block of tag = value.")
                tags = {tk: tv for tk, tv in value.items()}
            else:
                raise QueuesFileError(f"{where}: unknown key {k!r}; ElasticMQ's queue keys read here are {', '.join(ELASTICMQ_KEYS[:-2])}.")
        specs.append(_spec(where, name, attributes, tags, dead_letter))
    return _checked(path, specs)


def _seconds(where: str, value: Any) -> int:
    """An ElasticMQ duration in whole seconds: HOCON's "10 seconds" or "1 minute", or a bare
    number, which HOCON reads as milliseconds."""
    if isinstance(value, bool):
        raise QueuesFileError(f"{where}: expected a duration such as 10 seconds, not {V.shorten(value)}.")
    if isinstance(value, (int, float)):
        value = timedelta(milliseconds=value)
    elif not isinstance(value, timedelta):
        try:  # dateutil's relativedelta, which pyhocon gives where dateutil is installed
            start = datetime(2000, 1, 1)
            value = (start + value) - start
        except TypeError:
            raise QueuesFileError(f"{where}: expected a duration such as 10 seconds, not {V.shorten(value)}.") from None
    seconds = value.total_seconds()
    if seconds != int(seconds):
        raise QueuesFileError(f"{where}: {seconds:g} seconds is not a whole number of seconds, which SQS counts in.")
    return int(seconds)


def _spec(where: str, name: Any, attributes: Mapping[str, Any], tags: Any, dead_letter: tuple[Any, Any] | None) -> QueueSpec:
    """One queue's declaration, checked as CreateQueue would check it, key by key."""
    try:
        name = V.queue_name(name)
    except SQSError as err:
        raise QueuesFileError(f"{where}: name: {_said(err)}") from None
    out: dict[str, str] = {}
    for key, value in attributes.items():
        value = _text(value)
        if isinstance(value, Mapping) and key in ("RedrivePolicy", "RedriveAllowPolicy", "Policy"):
            value = json.dumps(dict(value))
        if key not in D.SETTABLE_ATTRIBUTES:
            raise QueuesFileError(
                f"{where}: attribute {key!r}: not an attribute a queue can be given; use one of {', '.join(D.SETTABLE_ATTRIBUTES)}."
            )
        try:
            out.update(V.queue_attributes({key: value}, creating=True))
        except SQSError as err:
            raise QueuesFileError(f"{where}: attribute {key!r}: {_said(err)}") from None
    is_fifo = name.endswith(".fifo")
    if out.get("FifoQueue", "true" if is_fifo else "false") != ("true" if is_fifo else "false"):
        why = (
            'a FIFO queue\'s name must end in .fifo (quote it in HOCON: "name.fifo" { ... })'
            if not is_fifo
            else "a name ending in .fifo is a FIFO queue's"
        )
        raise QueuesFileError(f"{where}: attribute 'FifoQueue' ({out['FifoQueue']}): {why}.")
    if is_fifo:
        out["FifoQueue"] = "true"
    else:
        out.pop("FifoQueue", None)
    try:
        V.check_fifo_attributes(name, is_fifo, out)
    except SQSError as err:
        raise QueuesFileError(f"{where}: {_said(err)}") from None
    if tags is not None:
        if isinstance(tags, Mapping):  # a tag's value is text: YAML's 2 or true are written as SQS would store them
            tags = {k: _text(v) for k, v in tags.items()}
        try:
            tags = V.tags(tags, name)
        except SQSError as err:
            raise QueuesFileError(f"{where}: tags: {_said(err)}") from None
    checked_dlq = None
    if dead_letter is not None:
        if "RedrivePolicy" in out:
            raise QueuesFileError(f"{where}: give the dead-letter queue once: as RedrivePolicy or as its name, not both.")
        target, count = dead_letter
        try:
            target = V.queue_name(target)
            count = V.int_value("maxReceiveCount", count, 1, 1000)
        except SQSError as err:
            raise QueuesFileError(f"{where}: dead-letter queue: {_said(err)}") from None
        checked_dlq = (target, count)
    return QueueSpec(name, out, tags, checked_dlq)


def _text(value: Any) -> Any:
    """A YAML, JSON or HOCON number or flag as SQS's text (true, 60); anything else as it is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return value


def _checked(path: Path, specs: list[QueueSpec]) -> list[QueueSpec]:
    names: set[str] = set()
    for spec in specs:
        if spec.name in names:
            raise QueuesFileError(f"{path}: queue {spec.name!r} is declared twice.")
        names.add(spec.name)
    return specs


def _said(err: SQSError) -> str:
    return err.hint or err.message


def apply_queues(db: Database, specs: list[QueueSpec], source: str = "the queues file") -> dict[str, list[str]]:
    """Make the database hold the queues declared, idempotently; returns the queue names
    Created, Updated, Unchanged, and those NotInFile (left as they are). Every dead-letter queue
    named must be declared or exist already, and be FIFO where its source is; checked before
    anything is written."""
    declared = {s.name: s for s in specs}
    existing = set(_all_queue_names(db))
    for spec in specs:
        if spec.dead_letter is None:
            continue
        target = spec.dead_letter[0]
        if target not in declared and target not in existing:
            raise QueuesFileError(
                f"{source}: queue {spec.name!r}: dead-letter queue {target!r} is neither declared in the file nor in the database."
            )
        if target.endswith(".fifo") != spec.name.endswith(".fifo"):
            raise QueuesFileError(
                f"{source}: queue {spec.name!r}: dead-letter queue {target!r}: a FIFO queue's dead-letter queue must be FIFO, "
                "and a standard queue's standard."
            )
    created: list[str] = []
    updated: list[str] = []
    unchanged: list[str] = []
    # Every queue first, then the redrive policies: a dead-letter queue may be declared after
    # the queues using it.
    for spec in specs:
        try:
            if spec.name not in existing:
                db.create_queue(spec.name, attributes=spec.attributes, tags=spec.tags)
                created.append(spec.name)
        except SQSError as err:
            raise QueuesFileError(f"{source}: queue {spec.name!r}: {_said(err)}") from None
    for spec in specs:
        wanted = dict(spec.attributes)
        if spec.dead_letter is not None:
            target, count = spec.dead_letter
            wanted["RedrivePolicy"] = json.dumps(
                {"deadLetterTargetArn": db.queue_arn(target), "maxReceiveCount": count}, separators=(",", ":")
            )
        try:
            changed = _reconcile(db, spec, wanted)
        except SQSError as err:
            raise QueuesFileError(f"{source}: queue {spec.name!r}: {_said(err)}") from None
        if spec.name not in created:
            (updated if changed else unchanged).append(spec.name)
    return {
        "Created": created,
        "Updated": updated,
        "Unchanged": unchanged,
        "NotInFile": sorted(existing - set(declared)),
    }


def _reconcile(db: Database, spec: QueueSpec, wanted: dict[str, str]) -> bool:
    """Give an existing queue the attributes and tags declared; whether anything changed."""
    queue = db.queue(spec.name)
    current = queue.get_queue_attributes(["All"])
    changes = {k: v for k, v in wanted.items() if k != "FifoQueue" and not _same(k, current.get(k), v)}
    if changes:
        queue.set_queue_attributes(changes)
    changed = bool(changes)
    if spec.tags is not None:
        tags = queue.list_queue_tags()
        stale = [k for k in tags if k not in spec.tags]
        if stale:
            queue.untag_queue(stale)
        differing = any(tags.get(k) != v for k, v in spec.tags.items())
        if differing:
            queue.tag_queue(spec.tags)
        changed = changed or bool(stale) or differing
    return changed


def _same(name: str, current: str | None, wanted: str) -> bool:
    if current == wanted:
        return True
    if current is None:
        return wanted == ""
    if name in ("RedrivePolicy", "RedriveAllowPolicy", "Policy") and current and wanted:
        try:
            return bool(json.loads(current) == json.loads(wanted))
        except ValueError:
            return False
    return False


def _all_queue_names(db: Database) -> list[str]:
    names: list[str] = []
    token = None
    while True:
        urls, token = db.list_queues("", D.MAX_LIST_QUEUES_RESULTS, token)
        names += [V.queue_name_from_url(u) for u in urls]
        if not token:
            return names
