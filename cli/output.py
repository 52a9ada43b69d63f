"""Rendering responses as json, table or text, the three formats of the aws CLI.

json is the aws CLI's (4-space indent, non-ASCII kept, binary values base64); text follows the
aws CLI's tab-separated rules (awscli/text.py); table is a readable grid with the same columns,
not a byte-for-byte copy of the aws CLI's box drawing. An empty response prints nothing.
"""

from __future__ import annotations

import base64
import json
from typing import Any


def _plain(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items() if k != "ResponseMetadata"}
    if isinstance(data, (list, tuple)):
        return [_plain(v) for v in data]
    if isinstance(data, (bytes, bytearray)):
        return base64.b64encode(bytes(data)).decode()
    return data


def render(data: Any, fmt: str, title: str = "") -> str:
    data = _plain(data)
    if data in ({}, [], None):
        return ""
    if fmt == "text":
        lines: list[str] = []
        _text(data, lines)
        return "\n".join(lines)
    if fmt == "table":
        return _table(data, title)
    return json.dumps(data, indent=4, ensure_ascii=False)


# ---------------------------------------------------------------------- text (aws rules)


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"  # the aws CLI prints Python's str()
    return "None" if v is None else str(v)


def _text(item: Any, out: list[str], identifier: str | None = None, scalar_keys: list[str] | None = None) -> None:
    if isinstance(item, dict):
        if scalar_keys is None:
            scalars = [_scalar(v) for k, v in sorted(item.items()) if not isinstance(v, (dict, list))]
            nested = [(k, v) for k, v in sorted(item.items()) if isinstance(v, (dict, list))]
        else:
            scalars = [_scalar(item.get(k, "")) for k in scalar_keys]
            nested = [(k, item[k]) for k in sorted(set(item) - set(scalar_keys))]
        if scalars:
            out.append("\t".join(([identifier.upper()] if identifier else []) + scalars))
        for key, value in nested:
            _text(value, out, key)
    elif isinstance(item, list):
        if not item:
            return
        if any(isinstance(e, dict) for e in item):
            keys = sorted({k for e in item if isinstance(e, dict) for k, v in e.items() if not isinstance(v, (dict, list))})
            for e in item:
                _text(e, out, identifier, keys)
            return
        scalars = [e for e in item if not isinstance(e, (dict, list))]
        if scalars:
            if identifier:
                out.extend(f"{identifier.upper()}\t{_scalar(e)}" for e in scalars)
            else:
                out.append("\t".join(_scalar(e) for e in scalars))
        for e in item:
            if isinstance(e, list):
                _text(e, out, identifier)
    else:
        out.append(_scalar(item))


# ---------------------------------------------------------------------- table


def _cell(v: Any) -> str:
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return "" if v is None else _scalar(v)


def grid(headers: list[str], rows: list[list[Any]], title: str = "") -> str:
    cells = [[_cell(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines = []
    if title:
        inner = len(rule) - 2
        lines += ["+" + "-" * inner + "+", "|" + title.center(inner) + "|"]
    lines += [rule, "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |", rule]
    for r in cells:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
    lines.append(rule)
    return "\n".join(lines)


def _table(data: Any, title: str) -> str:
    if not isinstance(data, dict):
        data = {"Value": data}
    parts: list[str] = []
    scalars = {k: v for k, v in data.items() if not isinstance(v, (dict, list))}
    if scalars:
        parts.append(grid(list(scalars), [list(scalars.values())], title))
        title = ""
    for key, value in data.items():
        if key in scalars:
            continue
        heading = f"{title}: {key}" if title else ""
        if isinstance(value, dict):
            parts.append(grid(["Name", "Value"], [[k, v] for k, v in value.items()], heading))
        elif value and all(isinstance(e, dict) for e in value):
            headers = list(dict.fromkeys(k for e in value for k in e))
            parts.append(grid(headers, [[e.get(h) for h in headers] for e in value], heading))
        elif value:
            parts.append(grid([key], [[e] for e in value], title))
        title = ""
    return "\n".join(parts)
