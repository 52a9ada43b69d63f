"""The aws-style argument types of the SQS commands' flags, read as the aws CLI reads them.

Structured arguments take what the aws CLI takes: shorthand (``VisibilityTimeout=60``), JSON
(anything starting with ``{`` or ``[``) or ``file://path`` holding either; every flag's value
may be ``file://path``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import click

from sqsqlite.command_options import Failure

from . import shorthand


class Usage(click.UsageError):
    """Bad usage the aws CLI words itself (a parameter check, a --query): its text alone, exit 252."""

    def show(self, file: Any = None) -> None:
        click.echo(self.message, err=True)


def read_paramfile(value: str, param_hint: str | None) -> str:
    """``file://path`` -> the file's text, as the aws CLI reads it; other values unchanged.

    ``fileb://path`` reads the file's bytes, as the aws CLI does, and like it refuses them: no SQS
    request member a flag sets is binary (BinaryValue sits inside --message-attributes). Either
    path expands ``~`` and then environment variables, as the aws CLI's paramfile does."""
    if value.startswith("fileb://"):
        path = _expanded(value[len("fileb://") :])
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise click.BadParameter(f"Unable to load paramfile {value}: {exc}", param_hint=param_hint) from None
        member = "".join(part.capitalize() for part in (param_hint or "").lstrip("-").split("-"))
        raise Usage(
            f"Parameter validation failed:\nInvalid type for parameter {member}, value: {data!r}, type: <class 'bytes'>, valid types: <class 'str'>"
        )
    if not value.startswith("file://"):
        return value
    path = _expanded(value[len("file://") :])
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"Unable to load paramfile {value}: {exc}", param_hint=param_hint) from None


def _expanded(path: str) -> str:
    return os.path.expandvars(os.path.expanduser(path))


class Text(click.ParamType):
    """A string that may also be given as file://path (e.g. a message body)."""

    name = "TEXT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        return read_paramfile(value, _hint(param))


class Integer(click.ParamType):
    """An integer that may also be given as file://path, as the aws CLI takes every flag.

    An SQS member's flag (``--delay-seconds``) is read with int(), as the aws CLI reads it: what
    int() refuses stops the command, exit 255, in Python's words. ``paging``: the aws CLI's own
    --max-items and --page-size, which its parser (argparse) refuses as bad usage."""

    name = "INTEGER"

    def __init__(self, paging: bool = False):
        self.paging = paging

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str) or self.paging:
            if isinstance(value, str):
                value = read_paramfile(value, _hint(param))
            return click.INT.convert(value, param, ctx)
        text = read_paramfile(value, _hint(param))
        try:
            return int(text)
        except ValueError as exc:
            raise Failure(f"{exc} ({_hint(param)} takes an integer)") from None


def _hint(param: click.Parameter | None) -> str | None:
    return param.opts[0] if param is not None and param.opts else None


class Structured(click.ParamType):
    """aws shorthand, JSON or file://. ``kind`` is the SQS shape:

    - ``map``: string to string (Attributes, Tags)
    - ``message-attributes``: name to {DataType, StringValue | BinaryValue}
    - ``entry``: one batch entry (the option is a ListOption; a JSON list gives several)
    - ``strings``: a list of names (a ListOption; a JSON list gives several)
    """

    # Members the aws CLI types as integers, converted from shorthand's strings as it does.
    _INTEGER_MEMBERS = {"DelaySeconds", "VisibilityTimeout"}

    def __init__(self, kind: str):
        self.kind = kind
        self.name = {"strings": "NAME", "entry": "ENTRY"}.get(kind, "SHORTHAND|JSON")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        text = read_paramfile(value, _hint(param))
        stripped = text.strip()
        if self.kind == "strings":
            if stripped.startswith("["):
                data = self._json(stripped, param, ctx)
                if not all(isinstance(x, str) for x in data):
                    self.fail(f"expected a JSON list of strings, got {stripped[:60]!r}", param, ctx)
                return data
            return text
        if stripped.startswith(("{", "[")):
            data = self._json(stripped, param, ctx)
        else:
            try:
                data = shorthand.parse(text)
            except shorthand.ShorthandError as exc:
                self.fail(f"Error parsing shorthand syntax, {exc}", param, ctx)
            data = self._from_shorthand(data, param, ctx)
        return self._check(data, param, ctx)

    def _json(self, text: str, param, ctx) -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            self.fail(f"Invalid JSON: {exc}\nJSON received: {text[:200]}", param, ctx)

    def _from_shorthand(self, data: dict, param, ctx) -> dict:
        if self.kind == "map":
            for key, v in data.items():
                if not isinstance(v, str):
                    self.fail(f'{key} takes one string; quote it ("a,b") or escape commas (a\\,b), or pass JSON', param, ctx)
        elif self.kind == "entry":
            # int() as the aws CLI converts them: a sign is taken ("-1" goes to SQS, which refuses
            # it for the entry alone); what int() refuses stops the command, exit 255 as in aws.
            for k, v in data.items():
                if k in self._INTEGER_MEMBERS and isinstance(v, str):
                    try:
                        data[k] = int(v)
                    except ValueError as exc:
                        raise Failure(f"{exc} ({k} in {_hint(param)} takes an integer)") from None
        return data

    def _check(self, data: Any, param, ctx) -> Any:
        # A batch entry's or a message attribute's own form is botocore's to judge, in its words
        # at every depth, as the aws CLI leaves it (Settings.call checks the whole request).
        if self.kind in ("entry", "message-attributes"):
            return data
        if not isinstance(data, dict):
            self.fail(f"expected an object of name/value pairs, got {type(data).__name__}", param, ctx)
        return data


MAP = Structured("map")
MESSAGE_ATTRIBUTES = Structured("message-attributes")
ENTRY = Structured("entry")
STRINGS = Structured("strings")
TEXT = Text()
INTEGER = Integer()
PAGING_INTEGER = Integer(paging=True)
