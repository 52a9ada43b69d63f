"""Rendering responses as the aws CLI does: json, text, table and yaml, after ``--query``.

- json: 4-space indent, non-ASCII kept, binary values base64; an empty object prints nothing,
  anything else (``null``, ``[]`` from a query) is printed.
- text: the aws CLI's tab-separated rules (awscli/text.py): a dict's scalars on one line in key
  order, after its nested members' identifier in capitals; lists of dicts share one sorted
  column set; Python's ``str()`` of each value (``True``, ``None``).
- table: the aws CLI's box drawing (see :mod:`table`).
- yaml: the aws CLI version 2's YAML: block style, keys sorted, non-ASCII kept.

``--query`` is a JMESPath expression (the ``jmespath`` library, as the aws CLI uses), applied to
the response before it is formatted. jmespath and PyYAML are imported only when used, so a
command that needs neither starts no slower.

The administration commands (``stats``, ``peek``...) keep their own readable grid for ``table``
and print nothing for an empty result.
"""

from __future__ import annotations

import base64
import json
from typing import Any


def plain(data: Any) -> Any:
    """The response as the aws CLI holds it: no ResponseMetadata, binary values base64."""
    if isinstance(data, dict):
        return {k: plain(v) for k, v in data.items() if k != "ResponseMetadata"}
    if isinstance(data, (list, tuple)):
        return [plain(v) for v in data]
    if isinstance(data, (bytes, bytearray)):
        return base64.b64encode(bytes(data)).decode()
    return data


class QueryError(ValueError):
    """A --query expression that is not JMESPath."""


def compile_query(expression: str) -> Any:
    """The compiled JMESPath expression (raises QueryError in the aws CLI's words)."""
    import jmespath
    from jmespath.exceptions import JMESPathError

    try:
        return jmespath.compile(expression)
    except JMESPathError as exc:
        raise QueryError(f"Bad value for --query {expression}: {exc}") from None


def render(data: Any, fmt: str, title: str = "", query: Any = None, color: bool = False, admin: bool = False) -> str:
    """The exact text the command prints (with its final newline), or "" for nothing."""
    data = plain(data)
    if query is not None:
        from jmespath.exceptions import JMESPathError

        try:
            data = query.search(data)
        except JMESPathError as exc:  # a function given a value of another type: the aws CLI says only this
            raise QueryError(str(exc)) from None
    if admin and data in ({}, [], None):
        return ""
    if fmt == "text":
        return text(data)
    if fmt == "table":
        if admin:
            return _admin_table(data, title)
        from . import table

        return table.render(data, title, color=color)
    if data == {}:
        return ""
    if fmt == "yaml":
        return yaml_text(data)
    return json.dumps(data, indent=4, ensure_ascii=False) + "\n"


def yaml_text(data: Any, sort_keys: bool = True) -> str:
    import yaml

    class _Dumper(yaml.SafeDumper):
        # Each value written out in full, as the aws CLI writes it: an object met twice (a
        # skeleton's shared pieces) would otherwise become an &anchor and its *alias, and an
        # edit of one would change both.
        def ignore_aliases(self, data: Any) -> bool:
            return True

    return yaml.dump(data, Dumper=_Dumper, default_flow_style=False, allow_unicode=True, sort_keys=sort_keys)


# ---------------------------------------------------------------------- text (aws rules)


def text(data: Any) -> str:
    lines: list[str] = []
    _text(data, lines, None, None)
    return "".join(line + "\n" for line in lines)


def _is_scalar(v: Any) -> bool:
    return not isinstance(v, (dict, list))


def _text(item: Any, out: list[str], identifier: str | None, scalar_keys: list[str] | None) -> None:
    if isinstance(item, dict):
        if scalar_keys is None:
            scalars = [str(v) for k, v in sorted(item.items()) if _is_scalar(v)]
            nested = [(k, v) for k, v in sorted(item.items()) if not _is_scalar(v)]
        else:
            scalars = [str(item.get(k, "")) for k in scalar_keys]
            nested = [(k, item[k]) for k in sorted(set(item) - set(scalar_keys))]
        if scalars:
            out.append("\t".join(([identifier.upper()] if identifier is not None else []) + scalars))
        for key, value in nested:
            _text(value, out, key, None)
    elif isinstance(item, list):
        if not item:
            return
        if any(isinstance(e, dict) for e in item):
            keys = sorted({k for e in item if isinstance(e, dict) for k, v in e.items() if _is_scalar(v)})
            for e in item:
                _text(e, out, identifier, keys)
        elif any(isinstance(e, list) for e in item):
            _scalar_list([e for e in item if _is_scalar(e)], identifier, out)
            for e in item:
                if not _is_scalar(e):
                    _text(e, out, identifier, None)
        else:
            _scalar_list(item, identifier, out)
    else:
        out.append(str(item))


def _scalar_list(items: list, identifier: str | None, out: list[str]) -> None:
    if not items:
        return
    if identifier is not None:
        out.extend(f"{identifier.upper()}\t{e}" for e in items)
    else:
        out.append("\t".join(str(e) for e in items))


# ---------------------------------------------------------------------- the administration grid


def _cell(v: Any) -> str:
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    if isinstance(v, bool):
        return "True" if v else "False"
    return "" if v is None else str(v)


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


def _admin_table(data: Any, title: str) -> str:
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
    return "\n".join(parts) + "\n" if parts else ""
