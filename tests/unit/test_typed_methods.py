"""The clients' methods are made from sqsqlite.action_table at import, so a type checker sees
them only through the declarations in the classes' ``if TYPE_CHECKING:`` blocks. These tests
hold the declarations to the table, and show mypy catching a misspelt method or member."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import sqsqlite
from sqsqlite.action_table import TABLE

HERE = Path(__file__).resolve().parent
PACKAGE = Path(sqsqlite.__file__).resolve().parent
# The Python type a member of each SQS type is declared with (botocore takes a tuple for a list).
PYTHON_TYPES = {"string": "str", "integer": "int", "list": "list[Any] | tuple[Any, ...]", "map": "dict[str, Any]"}


def declarations(module: str, cls: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The methods declared under ``if TYPE_CHECKING:`` in class cls of sqsqlite/<module>."""
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    (body,) = (node.body for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == cls)
    blocks = [node.body for node in body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    return {fn.name: fn for block in blocks for fn in block if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))}


def disagreements(declared: dict[str, ast.FunctionDef | ast.AsyncFunctionDef], coroutines: bool) -> list[str]:
    wrong = [f"{name}: not an action" for name in declared.keys() - {a.method for a in TABLE}]
    for action in TABLE:
        fn = declared.get(action.method)
        if fn is None:
            wrong.append(f"{action.method}: not declared")
            continue
        args = fn.args
        members = {a.arg: None if a.annotation is None else ast.unparse(a.annotation) for a in args.kwonlyargs}
        optional = {a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults) if default is not None}
        expected = {m: PYTHON_TYPES[t] for m, t in action.members.items()}
        if [a.arg for a in args.args] != ["self"] or args.vararg or args.kwarg or args.posonlyargs:
            wrong.append(f"{action.method}: takes more than self and keyword-only members")
        if list(members.items()) != list(expected.items()):
            wrong.append(f"{action.method}: members {members}, the table's {expected}")
        if optional != set(action.members) - set(action.required):
            wrong.append(f"{action.method}: optional {sorted(optional)}, the table's required {list(action.required)}")
        if fn.returns is None or ast.unparse(fn.returns) != "dict[str, Any]":
            wrong.append(f"{action.method}: returns {fn.returns and ast.unparse(fn.returns)}, not dict[str, Any]")
        if isinstance(fn, ast.AsyncFunctionDef) != coroutines:
            wrong.append(f"{action.method}: {'not ' if coroutines else ''}a coroutine")
    return wrong


@pytest.mark.parametrize(("module", "cls", "coroutines"), [("client.py", "SQSClient", False), ("aio.py", "AsyncSQSClient", True)])
def test_each_client_declares_every_action_of_the_table_with_its_members_and_types(module, cls, coroutines):
    assert disagreements(declarations(module, cls), coroutines) == []


def test_a_declaration_that_strays_from_the_table_is_reported():
    declared = declarations("client.py", "SQSClient")
    del declared["purge_queue"]
    send = declared["send_message"]
    send.args.kwonlyargs[1].arg = "MessageBdy"
    send.returns = ast.parse("dict", mode="eval").body
    assert disagreements(declared, coroutines=False) == [
        "send_message: members {'QueueUrl': 'str', 'MessageBdy': 'str', 'DelaySeconds': 'int', 'MessageAttributes': 'dict[str, Any]', "
        "'MessageSystemAttributes': 'dict[str, Any]', 'MessageDeduplicationId': 'str', 'MessageGroupId': 'str'}, the table's "
        "{'QueueUrl': 'str', 'MessageBody': 'str', 'DelaySeconds': 'int', 'MessageAttributes': 'dict[str, Any]', "
        "'MessageSystemAttributes': 'dict[str, Any]', 'MessageDeduplicationId': 'str', 'MessageGroupId': 'str'}",
        "send_message: returns dict, not dict[str, Any]",
        "purge_queue: not declared",
    ]


def test_the_package_says_it_is_typed_so_an_applications_checker_reads_the_declarations():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: tomllib's own origin
        import tomli as tomllib  # type: ignore[no-redef]

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "py.typed" in config["package-data"]["sqsqlite"]  # in the wheel: PEP 561's marker
    assert (PACKAGE / "py.typed").is_file()


def test_mypy_reports_a_misspelt_method_or_member_of_either_client_and_passes_correct_calls(tmp_path, monkeypatch):
    api = pytest.importorskip("mypy.api")
    calls = HERE / "typed_calls.py"
    expected = {
        (n, m.group(1)) for n, line in enumerate(calls.read_text().splitlines(), 1) if (m := re.search(r"# mypy: ([a-z-]+)$", line))
    }
    # The two client modules alone, what they import taken as Any (a few seconds, not the whole
    # package's minute), and no config file (whose reading would set an environment variable).
    monkeypatch.chdir(PACKAGE.parent)
    options = [
        "--config-file=",
        "--follow-imports=skip",
        "--ignore-missing-imports",
        "--cache-dir",
        str(tmp_path),
        "--no-error-summary",
        "--show-error-codes",
    ]
    report, errors, _ = api.run([*options, "--hide-error-context", str(calls), str(PACKAGE / "client.py"), str(PACKAGE / "aio.py")])
    assert errors == ""
    errors_by_file = [re.match(r"^(.+?):(\d+): error: .*\[([a-z-]+)\]$", line) for line in report.splitlines() if ": error: " in line]
    found = {(int(m[2]), m[3]) for m in errors_by_file if m and Path(m[1]).resolve() == calls}
    others = [m and m[0] for m in errors_by_file if not m or Path(m[1]).resolve() != calls]
    assert found == expected and others == [], report
