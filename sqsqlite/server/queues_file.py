"""Queues declared in a file, applied to a database: ``sqsqlite serve --queues FILE`` and
``sqsqlite apply-queues FILE``.

Three spellings of one declaration: YAML or JSON, and ElasticMQ's ``elasticmq.conf`` (HOCON),
whose ``queues { }`` block is read key by key (``ELASTICMQ_KEYS``). A YAML or JSON file is either
``queues:`` a list of queues, each ``name`` and ``attributes`` (fauxqs's init.json) or
CreateQueue's own ``QueueName`` and ``Attributes``, with ``tags`` and ``deadLetterQueue: {name,
maxReceiveCount}``; or a map of queue names to their attributes. Attributes are SQS's, checked by
CreateQueue's own code; a dead-letter queue (``deadLetterQueue`` or a RedrivePolicy's
deadLetterTargetArn) is named by its ARN or by its bare name.

The whole file is read and checked before anything is written: a file with one mistake is one
:class:`QueuesFileError` naming the file, the queue or line, and the key, and the database is left
as it was. Reading is bounded (the file may come from anywhere a deployment mounts it): its size
is checked before it is parsed, nesting and numbers are bounded, YAML anchors and aliases are
refused (a few aliases of aliases expand a small file without bound), a key given twice is
refused (YAML and JSON keep the last silently), and a HOCON file is read alone: no include but
ElasticMQ's ``include classpath(...)``, no substitution resolved.
Applying is idempotent and all or nothing (one transaction): a missing queue is created, an
existing one gets the attributes and tags the file gives (never dropped, its messages kept), and
a queue the file does not list is left as it is. A dead-letter queue may come later in the file
than the queues using them; an ARN of another account or region is refused as SQS refuses it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
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

_QUEUE_KEYS = ("name", "QueueName", "attributes", "Attributes", "tags", "deadLetterQueue")
_DLQ_KEYS = ("name", "maxReceiveCount")
# What the HOCON parser (pyhocon) would take for a string, comment, substitution, bracket, include
# or number: the lexical scan that bounds its nesting and its numbers and keeps its includes from
# being followed (it fetches include url(...) with no timeout, and reads include "file" from the
# working directory). include is a keyword as pyparsing's Keyword finds one, in any case.
_HOCON_TOKEN = re.compile(
    r'"""|"(?:[^"\\\n]|\\.)*"?|#|//|\$\{|[{}\[\]]'
    r"|(?<![A-Za-z0-9_$])(?i:include)(?![A-Za-z0-9_$])"
    r"|(?<![A-Za-z0-9_.$+-])[+-]?[0-9][0-9.]*(?:[eE][+-]?[0-9]+)?"
)
# An include's form after the keyword: required( ... ), a kind( ... ) (url, file, package; and
# classpath, which HOCON has and pyhocon does not), and the quoted name.
_HOCON_INCLUDE = re.compile(r'\s*(required\s*\(\s*)?(?:([A-Za-z]+)\s*\(\s*)?"((?:[^"\\\n]|\\.)*)"', re.IGNORECASE)
_HOCON_CLOSE = re.compile(r"\s*\)")
# Before a //, a character that leaves it a comment whatever came earlier on the line.
_HOCON_BEFORE_COMMENT = set('{}[],=:"')


class QueuesFileError(ValueError):
    """A queues file that can't be applied: the file, the queue and the key, and why."""


@dataclass
class QueueSpec:
    """One queue as the file declares it: SQS attribute strings but RedrivePolicy's target (a
    RedrivePolicy of "" takes it off), tags (None: left as they are) and its dead-letter queue."""

    name: str
    attributes: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] | None = None
    dead_letter: tuple[str, int] | None = None  # its dead-letter queue: a name or an ARN, maxReceiveCount
    dead_letter_key: str = "RedrivePolicy"  # how the file gave it: RedrivePolicy, deadLetterQueue, deadLettersQueue
    line: int | None = None  # where a YAML file declares the queue: what a refusal made while applying names
    dead_letter_line: int | None = None  # and the key giving its dead-letter queue


def read_queues_file(path: str | Path, max_bytes: int | None = None) -> list[QueueSpec]:
    """The queues a file declares, checked; QueuesFileError for the first mistake. The file is
    read boundedly: at most ``max_bytes`` (by default QUEUES_FILE_MAX_BYTES, or for HOCON
    QUEUES_FILE_MAX_HOCON_BYTES; checked before parsing), nesting and numbers bounded, YAML
    aliases and HOCON includes refused, duplicate keys refused."""
    path = Path(path)
    suffix = path.suffix.lower()
    hocon = suffix in (".conf", ".hocon")
    if max_bytes is None:
        max_bytes = D.QUEUES_FILE_MAX_HOCON_BYTES if hocon else D.QUEUES_FILE_MAX_BYTES
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            data = f.read(max_bytes + 1) if size <= max_bytes else b""
    except OSError as exc:
        raise QueuesFileError(f"{path}: can't read it ({exc.strerror or exc}).") from None
    size = max(size, len(data))  # a file that grew, or one stat can't size (a pipe)
    if size > max_bytes:
        raise QueuesFileError(
            f"{path}: {size:,} bytes, more than the {max_bytes:,} a queues file may hold; "
            "split its queues over several files and apply each (sqsqlite apply-queues)."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise QueuesFileError(f"{path}: not UTF-8 text.") from None
    if hocon:
        return _checked(path, _elasticmq(path, text))
    return _checked(path, _declared(path, _json(path, text) if suffix == ".json" else _yaml(path, text)))


# ---------------------------------------------------------------- YAML and JSON, read boundedly


class _Refused(Exception):
    """A reading refused at a line of the file (turned into QueuesFileError by the reader)."""

    def __init__(self, line: int, why: str):
        super().__init__(why)
        self.line, self.why = line, why


def _refused(path: Path, err: _Refused) -> QueuesFileError:
    return QueuesFileError(f"{path}: line {err.line}: {err.why}")


def _yaml(path: Path, text: str) -> Any:
    import yaml

    try:
        _check_yaml_events(text, yaml)
        return yaml.load(text, Loader=_strict_yaml_loader())  # noqa: S506  # a SafeLoader's subclass
    except _Refused as err:
        raise _refused(path, err) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise QueuesFileError(f"{path}: not YAML{where}: {getattr(exc, 'problem', None) or exc}.") from None


def _check_yaml_events(text: str, yaml: Any) -> None:
    """Refuse what would make a small YAML file large or deep, from the parser's events (C's where
    libyaml is there), before anything is built: an anchor or alias (one alias of a list of
    aliases ... is a "billion laughs": a few hundred bytes that expand without bound wherever the
    value is printed or copied), and nesting deeper than QUEUES_FILE_MAX_DEPTH."""
    # Per open map or list: [is a map, its current key or index, whether a key is next, whether
    # it is itself a key]; what the path to an event is named by in the error.
    stack: list[list[Any]] = []

    def at() -> str:
        parts = []
        for is_map, label, key_next, _ in stack:
            if not is_map:
                parts.append(f"[{label}]")
            elif not key_next:
                parts.append(f".{label}" if parts else str(label))
        return f" (at {''.join(parts)})" if parts else ""

    def done() -> None:  # a node ended: its map's next node is a key, its list's the next index
        if stack:
            frame = stack[-1]
            if frame[0]:
                frame[2] = not frame[2]
            else:
                frame[1] += 1

    for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        line = event.start_mark.line + 1
        if isinstance(event, yaml.NodeEvent) and event.anchor is not None:  # an alias names one too
            kind = "alias *" if isinstance(event, yaml.AliasEvent) else "anchor &"
            raise _Refused(
                line,
                f"YAML {kind}{event.anchor}{at()}: anchors and aliases are not read here (a few of them can "
                "make a small file expand without bound); write the value out where it is used.",
            )
        if not isinstance(event, yaml.NodeEvent):
            if isinstance(event, yaml.CollectionEndEvent) and stack:
                is_key = stack.pop()[3]
                if not is_key:
                    done()
                elif stack:
                    stack[-1][2] = False  # its value comes next
            continue
        as_key = bool(stack) and stack[-1][0] and stack[-1][2]
        if event.tag is not None and event.tag not in _YAML_TAGS:
            raise _Refused(
                line,
                f"YAML {event.tag.replace('tag:yaml.org,2002:', '!!')} value{at()}: a queues file holds text, numbers, flags, maps "
                "and lists (what JSON holds); write the value as text.",
            )
        if isinstance(event, yaml.ScalarEvent):
            if as_key and event.value == "<<" and event.tag is None and event.implicit[0]:  # unquoted: YAML's merge key
                raise _Refused(line, f"YAML merge key <<{at()}: {_MERGE_REFUSED}")
            if as_key:
                stack[-1][1], stack[-1][2] = event.value, False
            else:
                done()
            continue
        if as_key:
            stack[-1][1] = "(a key that is a map or list)"
        stack.append([isinstance(event, yaml.MappingStartEvent), 0, True, as_key])
        if len(stack) > D.QUEUES_FILE_MAX_DEPTH:
            raise _Refused(line, f"nested deeper than {D.QUEUES_FILE_MAX_DEPTH} maps and lists{at()}.")


_MERGE_REFUSED = "merged keys are not read here (the map's own keys win over them, silently); write each key out in the map."
# The explicit tags a value may carry: JSON's kinds, and a date, read as the text written.
_YAML_TAGS = {"!", *(f"tag:yaml.org,2002:{kind}" for kind in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp"))}


@functools.cache
def _strict_yaml_loader() -> Any:
    """YAML's safe loader (C's where libyaml is there) that refuses a key given twice in one map
    (YAML would keep the last silently: a second queues: drops the first list) or merged in by
    a merge key (<<, whose keys lose to the map's own, silently), and an integer longer than
    QUEUES_FILE_MAX_NUMBER_CHARS (Python refuses to print one of 4,300 digits). A date or time
    is the text written: an IAM policy's Version: 2012-10-17 is commonly left unquoted."""
    import yaml

    class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise _Refused(
                        key_node.start_mark.line + 1,
                        f"YAML merge key <<: {_MERGE_REFUSED}",
                    )
                key = self.construct_object(key_node, deep=deep)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.get(key)
                except TypeError:  # a key that can't be hashed: the loader's own error names it
                    break
                if first is not None:
                    raise _Refused(line, _twice(key, first, "YAML"))
                seen[key] = line
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node: Any) -> Any:
            if len(node.value) > D.QUEUES_FILE_MAX_NUMBER_CHARS:
                raise _Refused(node.start_mark.line + 1, _long_number(node.value))
            return super().construct_yaml_int(node)

        def construct_yaml_timestamp(self, node: Any) -> Any:
            return self.construct_scalar(node)

        def construct_yaml_map(self, node: Any) -> Any:
            data = _LinedMap()
            yield data
            data.update(self.construct_mapping(node))
            for key_node, _ in node.value:
                with contextlib.suppress(TypeError):  # an unhashable key: construct_mapping refused it
                    data.lines.setdefault(self.construct_object(key_node), key_node.start_mark.line + 1)

        def construct_yaml_seq(self, node: Any) -> Any:
            data = _LinedList()
            yield data
            data.extend(self.construct_sequence(node))
            data.lines = [item.start_mark.line + 1 for item in node.value]

    StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)
    StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", StrictLoader.construct_yaml_timestamp)
    StrictLoader.add_constructor("tag:yaml.org,2002:map", StrictLoader.construct_yaml_map)
    StrictLoader.add_constructor("tag:yaml.org,2002:seq", StrictLoader.construct_yaml_seq)
    return StrictLoader


class _LinedMap(dict[Any, Any]):
    """A YAML map that knows the line of each of its keys: where a refusal of its shape points."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: dict[Any, int] = {}


class _LinedList(list[Any]):
    """A YAML list that knows the line of each of its items."""

    lines: list[int] = []


def _twice(key: Any, first: int, spelling: str) -> str:
    return f"key {V.shorten(key)} is given twice in one map (first on line {first}); {spelling} would keep only the last, silently."


def _long_number(literal: str) -> str:
    return (
        f"the number {literal[:20]}... is {len(literal):,} characters long; "
        f"a queues file's numbers have at most {D.QUEUES_FILE_MAX_NUMBER_CHARS}."
    )


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


# A JSON text's strings, numbers, brackets and colons (anything else is left to json to judge).
# A string left open runs to the end of the text: matched once, not tried again from each quote in
# it (which made a file of escaped quotes take minutes); json then says where it is open.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|-?[0-9][-+.0-9eE]*|[\[\]{}:]')


def _json(path: Path, text: str) -> Any:
    _check_json_tokens(path, text)  # first: json itself recurses, and keeps a key's last value
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise QueuesFileError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None
    except (RecursionError, ValueError) as exc:  # what the check above keeps out: a backstop
        raise QueuesFileError(f"{path}: not JSON that can be read ({type(exc).__name__}).") from None


def _check_json_tokens(path: Path, text: str) -> None:
    """Refuse nesting deeper than QUEUES_FILE_MAX_DEPTH, a key given twice in one object and a
    number longer than QUEUES_FILE_MAX_NUMBER_CHARS, naming the line; one pass, no recursion."""
    objects: list[dict[str, int] | None] = []  # per open object where each key is; None for an array
    before = None  # the string just before, which a colon makes a key
    for m in _JSON_TOKEN.finditer(text):
        token = m.group()
        first = token[0]
        if first in "[{":
            objects.append({} if first == "{" else None)
            if len(objects) > D.QUEUES_FILE_MAX_DEPTH:
                raise _refused(path, _Refused(_line(text, m.start()), f"nested deeper than {D.QUEUES_FILE_MAX_DEPTH} objects and arrays."))
        elif first in "]}":
            if objects:
                objects.pop()
        elif first == ":":
            keys = objects[-1] if objects else None
            if before is not None and keys is not None:
                try:
                    key = json.loads(before.group())
                except ValueError:  # a bad escape: json's own error names it
                    key = None
                if key in keys:  # lines counted only here: counting at every key would be quadratic
                    raise _refused(path, _Refused(_line(text, before.start()), _twice(key, _line(text, keys[key]), "JSON")))
                if key is not None:
                    keys[key] = before.start()
        elif first != '"' and len(token) > D.QUEUES_FILE_MAX_NUMBER_CHARS:
            raise _refused(path, _Refused(_line(text, m.start()), _long_number(token)))
        before = m if first == '"' else None


def _declared(path: Path, data: Any) -> list[QueueSpec]:
    """The queues a YAML or JSON file declares, in either of its shapes: ``queues:`` a list of
    queues (each ``name`` or CreateQueue's ``QueueName``, ``attributes`` or ``Attributes``,
    ``tags``, ``deadLetterQueue``), or a map of queue names to their attributes. A YAML file's
    maps and lists know their lines (_strict_yaml_loader): a refusal names the line and key."""
    if not isinstance(data, dict) or not data:
        got = "nothing" if data is None or data == {} else V.shorten(data)
        raise QueuesFileError(f"{path}: expected {_SHAPES}; the file holds {got}.")
    for key in data:
        if key in _CREATE_QUEUE_MEMBERS and "queues" not in data:
            raise QueuesFileError(
                f"{_at(path, data, key)}key {key}: CreateQueue's input goes in a queues: list "
                f"(queues: [{{QueueName: ..., Attributes: ...}}]); a map at the top names queues (a queue named {key} too)."
            )
    return _listed(path, data) if "queues" in data else _named(path, data)


# What a YAML or JSON queues file holds, as a refusal of its shape says.
_SHAPES = "queues: a list of queues (each with a name or QueueName), or a map of queue names to their attributes"


def _listed(path: Path, data: dict[Any, Any]) -> list[QueueSpec]:
    """The ``queues:`` list form (fauxqs's init.json is one)."""
    for key in data:
        if key != "queues":
            raise QueuesFileError(
                f"{_at(path, data, key)}key {V.shorten(key)}: a file with a queues list holds nothing else; "
                "declare every queue in the list (a queue named queues too)."
            )
    queues = data["queues"]
    if not isinstance(queues, list):
        raise QueuesFileError(f"{_at(path, data, 'queues')}queues: expected a list of queues, each with a name or QueueName.")
    specs = []
    for i, entry in enumerate(queues):
        here = f"{_at(path, queues, i)}queues[{i}]"
        if not isinstance(entry, dict):
            raise QueuesFileError(f"{here}: expected a map with a name or QueueName, not {V.shorten(entry)}.")
        named = [k for k in _NAME_KEYS if k in entry]
        if len(named) != 1:
            why = "give the queue's name once, as one of them" if named else "a queue needs one"
            raise QueuesFileError(f"{here}: {' and '.join(named) or 'no name or QueueName'}: {why}.")
        name = entry[named[0]]
        if not isinstance(name, str):
            raise QueuesFileError(
                f"{_at(path, entry, named[0])}queues[{i}].{named[0]}: expected the queue's name as text, not {V.shorten(name)}"
                f"{_name_hint(name)}."
            )
        where = f"{_at(path, queues, i)}queue {name!r}"
        for key in entry:
            if key not in _QUEUE_KEYS:
                raise QueuesFileError(
                    f"{_at(path, entry, key)}queue {name!r}: key {V.shorten(key)} is unknown; a queue takes {', '.join(_QUEUE_KEYS)}."
                )
        given = [k for k in _ATTRIBUTES_KEYS if k in entry]
        if len(given) > 1:
            raise QueuesFileError(f"{_at(path, entry, given[1])}queue {name!r}: attributes and Attributes: give the attributes once.")
        attributes = entry.get(given[0]) if given else None
        if attributes is None:
            attributes = {}
        if not isinstance(attributes, dict):
            raise QueuesFileError(
                f"{_at(path, entry, given[0])}queue {name!r}: {given[0]}: expected a map of SQS attribute names to values, "
                f"not {V.shorten(attributes)}."
            )
        dead_letter = None
        dlq = entry.get("deadLetterQueue")
        if dlq is not None:
            dlq_where = f"{_at(path, entry, 'deadLetterQueue')}queue {name!r}: deadLetterQueue"
            if not isinstance(dlq, dict):
                raise QueuesFileError(f"{dlq_where}: expected a map of name and maxReceiveCount, not {V.shorten(dlq)}.")
            for key in dlq:
                if key not in _DLQ_KEYS:
                    raise QueuesFileError(
                        f"{_at(path, dlq, key)}queue {name!r}: deadLetterQueue.{key}: unknown key; it takes name and maxReceiveCount."
                    )
            for key in _DLQ_KEYS:
                if key not in dlq:
                    raise QueuesFileError(f"{dlq_where}.{key}: missing; deadLetterQueue takes name and maxReceiveCount.")
            dead_letter = (dlq["name"], dlq["maxReceiveCount"])
        spec = _spec(
            where, name, attributes, entry.get("tags"), dead_letter, _lines_of(path, name, attributes), _lines_of(path, name, entry)
        )
        spec.line = _line_in(queues, i)
        spec.dead_letter_line = _line_in(entry, "deadLetterQueue") or _line_in(attributes, "RedrivePolicy")
        specs.append(spec)
    return specs


def _named(path: Path, data: dict[Any, Any]) -> list[QueueSpec]:
    """The map form: each queue's name to its attributes (nothing for none)."""
    specs = []
    for name, attributes in data.items():
        where = f"{_at(path, data, name)}queue {V.shorten(name)}"
        if name is None or isinstance(name, bool):
            raise QueuesFileError(f"{where}: expected the queue's name as text; {_QUOTE_IT}.")
        if attributes is None:
            attributes = {}
        if not isinstance(attributes, dict):
            raise QueuesFileError(
                f"{where}: expected a map of its attributes (SQS attribute names to values), not {V.shorten(attributes)}; "
                "a list of queues goes under queues:."
            )
        for key in attributes:
            if key in _QUEUE_KEYS:
                raise QueuesFileError(
                    f"{_at(path, attributes, key)}queue {V.shorten(name)}: {key}: a map of queue names holds each queue's attributes only; "
                    "give tags, a deadLetterQueue or Attributes in the queues: list form."
                )
        spec = _spec(where, name, attributes, None, None, _lines_of(path, name, attributes))
        spec.line, spec.dead_letter_line = _line_in(data, name), _line_in(attributes, "RedrivePolicy")
        specs.append(spec)
    return specs


_NAME_KEYS = ("name", "QueueName")
_CREATE_QUEUE_MEMBERS = ("QueueName", "Attributes", "tags")
# What YAML makes of an unquoted yes, no, on, off, true, false, null or ~ where a name goes.
_QUOTE_IT = "YAML reads an unquoted yes, no, on, off, true or false as a flag and null or ~ as nothing: quote the name"


def _name_hint(name: Any) -> str:
    return f" ({_QUOTE_IT})" if name is None or isinstance(name, bool) else ""


_ATTRIBUTES_KEYS = ("attributes", "Attributes")


def _at(path: Path, container: Any, key: Any) -> str:
    """The file, and the line of ``key`` in ``container`` where the YAML reader noted it."""
    line = _line_in(container, key)
    return f"{path}: line {line}: " if line else f"{path}: "


def _line_in(container: Any, key: Any) -> int | None:
    """The line of ``key`` in ``container``, where the YAML reader noted it (JSON's are not)."""
    lines = getattr(container, "lines", None)
    if isinstance(lines, dict):
        return lines.get(key)
    if isinstance(lines, list) and isinstance(key, int) and 0 <= key < len(lines):
        return lines[key]
    return None


def _lines_of(path: Path, name: Any, attributes: Any) -> Callable[[Any], str]:
    """Where each of a queue's attributes is, as a refusal of it names it."""
    return lambda key: f"{_at(path, attributes, key)}queue {V.shorten(name)}"


def _elasticmq(path: Path, text: str) -> list[QueueSpec]:
    try:
        from pyhocon import ConfigFactory, ConfigTree
    except ImportError:
        raise QueuesFileError(
            f"{path}: reading ElasticMQ's HOCON needs pyhocon, which is not installed: pip install '{HOCON_EXTRA}'."
        ) from None
    from pyhocon.config_tree import ConfigValues

    text = _hocon_checked(path, text)
    try:
        # Unresolved: a substitution's value is never computed (a few ${a} ${a} concatenations can
        # make a small file expand without bound), and one in the queues block is refused below.
        with _includes_refused():
            config = ConfigFactory.parse_string(text, resolve=False)
    except _IncludeRefused as refused:
        raise QueuesFileError(
            f"{path}: include of {V.shorten(refused.name)}: a queues file is read alone (an include is never fetched or read); "
            "write its queues into this file."
        ) from None
    except RecursionError:  # the scan above bounds the nesting; this is its backstop
        raise QueuesFileError(
            f"{path}: nested too deep for the HOCON parser; at most {D.QUEUES_FILE_MAX_DEPTH} blocks and lists."
        ) from None
    except Exception as exc:  # pyparsing's and pyhocon's own errors, which share no base class
        raise QueuesFileError(f"{path}: not HOCON: {str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__}.") from None
    queues = config.get("queues", None) if isinstance(config, ConfigTree) else None
    if queues is None:
        raise QueuesFileError(f"{path}: no queues {{ }} block.")
    unresolved = _substitution(queues, ConfigTree, ConfigValues)
    if unresolved is not None:
        raise QueuesFileError(
            f"{path}: {unresolved}: a substitution (${{...}}) is not resolved in the queues block; write the value itself."
        )
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
                if value or not (k == "fifo" and not name.endswith(".fifo")):  # ElasticMQ's fifo = false: a standard queue
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
        specs.append(_spec(where, name, attributes, tags, dead_letter, dead_letter_key="deadLettersQueue"))
    return specs


class _IncludeRefused(Exception):
    def __init__(self, name: Any):
        super().__init__(name)
        self.name = str(name)


_PARSING = threading.Lock()


@contextlib.contextmanager
def _includes_refused() -> Iterator[None]:
    """pyhocon's own ways to an included file or URL refuse while this file is parsed: the scan
    (_hocon_checked) names an include's line, and this holds for any spelling the scan may not
    read as pyparsing does (a keyword's case folding, an escaped quote in an unquoted value)."""
    from pyhocon import ConfigFactory, ConfigParser

    def refuse(cls: Any, name: Any, *args: Any, **kwargs: Any) -> Any:
        raise _IncludeRefused(name)

    ways = [(ConfigFactory, "parse_URL"), (ConfigFactory, "parse_file"), (ConfigParser, "resolve_package_path")]
    with _PARSING:
        saved = [(owner, name, owner.__dict__[name]) for owner, name in ways]
        try:
            for owner, name in ways:
                setattr(owner, name, classmethod(refuse))
            yield
        finally:
            for owner, name, was in saved:
                setattr(owner, name, was)


def _hocon_checked(path: Path, text: str) -> str:
    """The HOCON text to parse: its include classpath(...) lines (ElasticMQ's own defaults, in its
    jar: nothing to read here) blanked out, every other include refused, nesting deeper than
    QUEUES_FILE_MAX_DEPTH and numbers longer than QUEUES_FILE_MAX_NUMBER_CHARS refused; each
    naming its line. One pass over the tokens pyhocon's grammar has (_HOCON_TOKEN), no recursion."""
    blanked: list[tuple[int, int]] = []
    depth = pos = 0
    while (m := _HOCON_TOKEN.search(text, pos)) is not None:
        token, start, pos = m.group(), m.start(), m.end()
        if token == '"""':  # to the closing quotes, the quotes just before them included
            end = text.find('"""', pos)
            pos = len(text) if end < 0 else end + 3
            while pos < len(text) and text[pos] == '"':
                pos += 1
        elif token[0] == '"':
            pass
        elif token == "#" or token == "//":
            eol = text.find("\n", pos)
            eol = len(text) if eol < 0 else eol
            if token == "//" and start > 0 and not text[start - 1].isspace() and text[start - 1] not in _HOCON_BEFORE_COMMENT:
                continue  # foo//bar: one unquoted string, which the parser reads on
            before = text[text.rfind("\n", 0, start) + 1 : start].rstrip()
            if token == "//" and before and before[-1] not in _HOCON_BEFORE_COMMENT:
                # a key of words and spaces may hold //: read as a key, the rest is no comment
                ahead = re.search(r"(?<![A-Za-z0-9_$])(?i:include)(?![A-Za-z0-9_$])", text[pos:eol])
                if ahead is not None and _HOCON_INCLUDE.match(text, pos + ahead.end()) is not None:
                    _hocon_include(path, text, pos + ahead.start(), pos + ahead.end(), blanked)
            pos = eol
        elif token == "${":
            end = text.find("}", pos)
            pos = len(text) if end < 0 else end + 1
        elif token in "{[":
            depth += 1
            if depth > D.QUEUES_FILE_MAX_DEPTH:
                raise QueuesFileError(f"{path}: line {_line(text, start)}: nested deeper than {D.QUEUES_FILE_MAX_DEPTH} blocks and lists.")
        elif token in "}]":
            depth = max(depth - 1, 0)
        elif token.lower() == "include":
            pos = _hocon_include(path, text, start, pos, blanked)
        elif len(token) > D.QUEUES_FILE_MAX_NUMBER_CHARS:
            raise QueuesFileError(f"{path}: line {_line(text, start)}: {_long_number(token)}")
    for start, end in reversed(blanked):
        text = text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]
    return text


def _hocon_include(path: Path, text: str, start: int, pos: int, blanked: list[tuple[int, int]]) -> int:
    """An include at ``start`` (its keyword ending at ``pos``): a classpath one is noted to be
    blanked out, any other refused; where to scan on. A word include that starts no include (a
    key named include) is left to the parser."""
    m = _HOCON_INCLUDE.match(text, pos)
    if m is None:
        return pos
    required, kind, name = m.group(1), (m.group(2) or "").lower(), m.group(3)
    if kind == "classpath":
        end = m.end()
        for _ in range(2 if required else 1):
            close = _HOCON_CLOSE.match(text, end)
            if close is None:
                return end  # unclosed: the parser's own error says where
            end = close.end()
        blanked.append((start, end))
        return end
    line = _line(text, start)
    if kind == "url" or (not kind and name.lower().startswith(("http://", "https://", "file://"))):
        raise QueuesFileError(
            f"{path}: line {line}: include of the URL {name!r}: a queues file is read alone and never fetches anything; "
            "put the queues it would bring in this file."
        )
    raise QueuesFileError(
        f"{path}: line {line}: include of {name!r}: a queues file is read alone (include classpath(...), ElasticMQ's "
        "own defaults, is the only include accepted); put the queues it would bring in this file."
    )


def _substitution(value: Any, tree: Any, values: Any) -> str | None:
    """Where in the queues block a substitution is left unresolved (queue and key), if anywhere."""
    pending: list[tuple[str, Any]] = [("queues", value)]
    while pending:
        where, item = pending.pop()
        if isinstance(item, values):
            return where
        if isinstance(item, tree):
            pending += [(f"{where}.{k}", v) for k, v in item.items()]
        elif isinstance(item, list):
            pending += [(f"{where}[{i}]", v) for i, v in enumerate(item)]
    return None


def _seconds(where: str, value: Any) -> int:
    """An ElasticMQ duration in whole seconds: HOCON's "10 seconds" or "1 minute", or a bare
    number, which HOCON reads as milliseconds."""
    if isinstance(value, bool):
        raise QueuesFileError(f"{where}: expected a duration such as 10 seconds, not {V.shorten(value)}.")
    try:
        if isinstance(value, (int, float)):
            value = timedelta(milliseconds=value)
        elif not isinstance(value, timedelta):  # dateutil's relativedelta, which pyhocon gives where dateutil is installed
            start = datetime(2000, 1, 1)
            value = (start + value) - start
    except TypeError:
        raise QueuesFileError(f"{where}: expected a duration such as 10 seconds, not {V.shorten(value)}.") from None
    except (OverflowError, ValueError):  # 1e400, or more days than a date holds
        raise QueuesFileError(f"{where}: {V.shorten(value)} is far longer than any duration SQS takes.") from None
    seconds = value.total_seconds()
    if seconds != int(seconds):
        raise QueuesFileError(f"{where}: {seconds:g} seconds is not a whole number of seconds, which SQS counts in.")
    return int(seconds)


def _spec(
    where: str,
    name: Any,
    attributes: Mapping[Any, Any],
    tags: Any,
    dead_letter: tuple[Any, Any] | None,
    where_of: Callable[[Any], str] | None = None,
    entry_where_of: Callable[[Any], str] | None = None,
    dead_letter_key: str = "deadLetterQueue",
) -> QueueSpec:
    """One queue's declaration, checked key by key by CreateQueue's own rules (validation's), so a
    refusal says what CreateQueue would. ``where_of`` names an attribute's own place (its line),
    ``entry_where_of`` that of the queue's own keys (tags, deadLetterQueue)."""
    try:
        name = V.queue_name(name)
    except SQSError as err:
        raise QueuesFileError(f"{where}: name: {_said(err)}") from None
    out: dict[str, str] = {}
    redrive: tuple[str, int] | None = None
    for key, value in attributes.items():
        at = where_of(key) if where_of is not None else where
        value = _text(value)
        if isinstance(value, Mapping) and key in ("RedrivePolicy", "RedriveAllowPolicy", "Policy"):
            value = json.dumps(dict(value))
        if key == "RedrivePolicy" and value not in ("", None):
            redrive = _dead_letter(f"{at}: attribute 'RedrivePolicy'", value)
            continue
        try:
            out.update(V.queue_attributes({key: value}, creating=True))
        except SQSError as err:
            raise QueuesFileError(f"{at}: attribute {V.shorten(key)}: {_said(err)}") from None
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
    try:  # FifoQueue on a standard queue too: CreateQueue refuses even false (Unknown Attribute FifoQueue)
        V.check_fifo_attributes(name, is_fifo, out)
    except SQSError as err:
        raise QueuesFileError(f"{where}: {_said(err)}") from None
    if tags is not None:
        if isinstance(tags, Mapping):  # a tag's value is text: YAML's 2 or true are written as SQS would store them
            tags = {k: _text(v) for k, v in tags.items()}
        try:
            tags = V.tags(tags, name)
        except SQSError as err:
            raise QueuesFileError(f"{entry_where_of('tags') if entry_where_of else where}: tags: {_said(err)}") from None
    via = "RedrivePolicy"
    if dead_letter is not None:
        if redrive is not None or "RedrivePolicy" in out:
            raise QueuesFileError(f"{where}: give the dead-letter queue once: as RedrivePolicy or as its name, not both.")
        target, count = dead_letter
        if entry_where_of is not None:
            where = entry_where_of(dead_letter_key)
        if not isinstance(target, str):
            raise QueuesFileError(
                f"{where}: {dead_letter_key}: name: expected the dead-letter queue's name or ARN, not {V.shorten(target)}."
            )
        redrive = _dead_letter(f"{where}: {dead_letter_key}", {"deadLetterTargetArn": target, "maxReceiveCount": count}, "name")
        via = dead_letter_key
    return QueueSpec(name, out, tags, redrive, via)


# Stands for the account and region a bare dead-letter queue name will have: only for checking
# the rest of its policy by CreateQueue's rules, which take an ARN; never written.
_SOME_ARN = "arn:aws:sqs:us-east-1:000000000000:"


def _dead_letter(where: str, value: Any, target_key: str = "deadLetterTargetArn") -> tuple[str, int]:
    """A RedrivePolicy (JSON text or a map) checked by CreateQueue's rules, its deadLetterTargetArn
    an ARN or, here only, a bare queue name (its ARN is the database's, known when applied):
    (the ARN or name, maxReceiveCount). ``target_key`` is the target's key in the file."""
    given = value
    if isinstance(value, str):
        try:
            given = json.loads(value)
        except (ValueError, RecursionError):  # CreateQueue's check below refuses it in its words
            given = None
    bare: str | None = None  # the target as a bare name, which CreateQueue's check can't take
    if isinstance(given, Mapping) and set(given) == {"deadLetterTargetArn", "maxReceiveCount"}:
        target = given["deadLetterTargetArn"]
        if isinstance(target, str) and not target.lower().startswith("arn:"):
            bare = target
    if bare is not None:
        try:
            V.queue_name(bare)
        except SQSError as err:
            raise QueuesFileError(f"{where}: {target_key}: {_said(err)}") from None
        value = {**given, "deadLetterTargetArn": _SOME_ARN + bare}
    try:
        policy = V.redrive_policy(value) or {}
    except SQSError as err:
        raise QueuesFileError(f"{where}: {_said(err)}") from None
    return bare or policy["deadLetterTargetArn"], policy["maxReceiveCount"]


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
    Created, Updated, Unchanged, and those NotInFile (left as they are).

    All or nothing: one transaction, in which every dead-letter queue named (by deadLetterQueue or
    a RedrivePolicy, by name or ARN) is first checked to be of this database's account and region,
    declared in the file or in the database, of the source's type (FIFO or standard), and allowed
    by its RedriveAllowPolicy as the file leaves it; then the queues are created and updated. A
    refusal on the way (a name deleted less than 60 seconds ago, say) rolls back all of it: the
    database is left as it was."""
    with db.transaction():
        existing = set(db.queue_names())
        redrives = _redrives(db, specs, existing, source)
        created: list[str] = []
        changed: set[str] = set()
        # Every queue first, then their attributes and tags, then the redrive policies: a
        # dead-letter queue may be declared after the queues using it, and its
        # RedriveAllowPolicy, as the file sets it, is in place before they name it.
        for spec in specs:
            if spec.name not in existing:
                attributes = {k: v for k, v in spec.attributes.items() if k != "RedrivePolicy"}
                _applying(source, spec, lambda s=spec, a=attributes: db.create_queue(s.name, attributes=a, tags=s.tags))
                created.append(spec.name)
        for spec in specs:
            wanted = {k: v for k, v in spec.attributes.items() if k != "RedrivePolicy"}
            if _applying(source, spec, lambda s=spec, w=wanted: _reconcile(db, s, w, tags=True)):
                changed.add(spec.name)
        for spec in specs:
            if spec.name in redrives:
                wanted = {"RedrivePolicy": redrives[spec.name]}
                if _applying(source, spec, lambda s=spec, w=wanted: _reconcile(db, s, w, tags=False)):
                    changed.add(spec.name)
    declared = [s.name for s in specs]
    return {
        "Created": created,
        "Updated": [n for n in declared if n in changed and n not in created],
        "Unchanged": [n for n in declared if n not in changed and n not in created],
        "NotInFile": sorted(existing - set(declared)),
    }


def _applying(source: str, spec: QueueSpec, write: Any) -> Any:
    try:
        return write()
    except SQSError as err:
        raise QueuesFileError(f"{_place(source, spec, spec.line)}: {_said(err)}") from None


def _place(source: str, spec: QueueSpec, line: int | None) -> str:
    return f"{source}: line {line}: queue {spec.name!r}" if line else f"{source}: queue {spec.name!r}"


def _redrives(db: Database, specs: list[QueueSpec], existing: set[str], source: str) -> dict[str, str]:
    """Each queue's RedrivePolicy as the file gives it (by deadLetterQueue or as the attribute),
    its dead-letter queue checked as SetQueueAttributes would check it against the database as
    the file leaves it: declared there or already in the database, of the source's type, and
    allowed as a source by its RedriveAllowPolicy (the file's, else the queue's own)."""
    declared = {s.name: s for s in specs}
    policies: dict[str, str] = {}
    for spec in specs:
        where = _place(source, spec, spec.dead_letter_line or spec.line)
        if spec.dead_letter is not None:
            given, count = spec.dead_letter
            by_policy = spec.dead_letter_key == "RedrivePolicy"
            what = f"{'RedrivePolicy: ' if by_policy else ''}dead-letter queue {given!r}"
            target = given
            if given.lower().startswith("arn:"):  # another account's or region's is refused as SetQueueAttributes refuses it
                try:
                    target = db.name_from_arn(given, "deadLetterTargetArn" if by_policy else f"{spec.dead_letter_key}'s name")
                except SQSError as err:
                    raise QueuesFileError(f"{where}: {'RedrivePolicy: ' if by_policy else ''}dead-letter queue: {_said(err)}") from None
            policy = json.dumps({"deadLetterTargetArn": db.queue_arn(target), "maxReceiveCount": count}, separators=(",", ":"))
        else:
            if "RedrivePolicy" in spec.attributes:  # "": the policy taken off
                policies[spec.name] = ""
            continue
        if target not in declared and target not in existing:
            raise QueuesFileError(f"{where}: {what} is neither declared in the file nor in the database.")
        if target.endswith(".fifo") != spec.name.endswith(".fifo"):
            raise QueuesFileError(f"{where}: {what}: a FIFO queue's dead-letter queue must be FIFO, and a standard queue's standard.")
        allow = declared[target].attributes.get("RedriveAllowPolicy") if target in declared else None
        if allow is None and target in existing:
            allow = db.queue(target).get_queue_attributes(["RedriveAllowPolicy"]).get("RedriveAllowPolicy")
        if allow:
            rule = json.loads(allow)
            if rule["redrivePermission"] == "denyAll" or (
                rule["redrivePermission"] == "byQueue" and db.queue_arn(spec.name) not in rule.get("sourceQueueArns", [])
            ):
                raise QueuesFileError(f"{where}: {what}: its RedriveAllowPolicy does not allow this queue as a source.")
        policies[spec.name] = policy
    return policies


def _reconcile(db: Database, spec: QueueSpec, wanted: dict[str, str], tags: bool) -> bool:
    """Give a queue the attributes (and with ``tags``, the tags) declared; whether anything changed."""
    queue = db.queue(spec.name)
    current = queue.get_queue_attributes(["All"])
    changes = {k: v for k, v in wanted.items() if k != "FifoQueue" and not _same(k, current.get(k), v)}
    if changes:
        queue.set_queue_attributes(changes)
    if not tags or spec.tags is None:
        return bool(changes)
    current_tags = queue.list_queue_tags()
    stale = [k for k in current_tags if k not in spec.tags]
    if stale:
        queue.untag_queue(stale)
    differing = any(current_tags.get(k) != v for k, v in spec.tags.items())
    if differing:
        queue.tag_queue(spec.tags)
    return bool(changes or stale or differing)


def _same(name: str, current: str | None, wanted: str) -> bool:
    if current is None or current == wanted:  # an attribute never set is its empty value
        return (current or "") == wanted
    if name in ("RedrivePolicy", "RedriveAllowPolicy", "Policy") and current and wanted:
        try:
            return bool(json.loads(current) == json.loads(wanted))
        except ValueError:
            return False
    return False
