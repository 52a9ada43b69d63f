"""The house's rules, checked on the code as it stands: imports flow down through the layers
docs/explanation/architecture.md lists, no module reaches into another module's underscore names, and no
module outgrows one responsibility."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The installed package's folders: sqsqlite.cli and sqsqlite.migrations live beside sqsqlite/.
PACKAGES = {"sqsqlite": ROOT / "sqsqlite", "sqsqlite.cli": ROOT / "cli", "sqsqlite.migrations": ROOT / "migrations"}
# Names every namedtuple and a few standard objects offer with a leading underscore.
STANDARD = {"_fields", "_replace", "_asdict", "_make", "_field_defaults", "_exit", "_getframe"}


def modules():
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            name = ".".join((package, *parts[:-1])) if parts[-1] == "__init__" else ".".join((package, *parts))
            yield name, path, ast.parse(path.read_text(encoding="utf-8"))


MODULES = list(modules())


def imported(name: str, tree: ast.AST, is_package: bool):
    """Absolute names of the modules a module imports (relative imports resolved)."""
    base = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                stem = base[: len(base) - node.level + 1]
                yield ".".join(stem + ([node.module] if node.module else []))
            elif node.module:
                yield node.module


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_imports_flow_down_through_the_layers():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_nothing_but_the_cli_imports_the_cli_and_nothing_imports_the_migration_scripts():
    for name, path, tree in MODULES:
        for target in imported(name, tree, path.name == "__init__.py"):
            for guarded in ("sqsqlite.cli", "sqsqlite.migrations"):
                if not within(name, guarded):
                    assert not within(target, guarded), f"{name} imports {target}"


def test_the_engine_holds_no_import_circle_not_even_through_type_checking_imports():
    # import-linter leaves TYPE_CHECKING imports out; a circle held by them is still a circle to
    # a reader. The operations are given a context (core/context.py), never a Database or a
    # Queue, and the API classes name each other through protocols (QueueDatabase, BufferedSource).
    core = ROOT / "sqsqlite" / "core"
    graph: dict[str, set[str]] = {}
    for path in sorted(core.glob("*.py")):
        if path.stem == "__init__":  # the package's face imports its modules
            continue
        imported = graph.setdefault(path.stem, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
                imported.update(n for n in names if (core / f"{n}.py").exists() and n != "__init__")

    def circle_from(start: str, at: str, path: list[str], seen: set[str]) -> list[str] | None:
        for name in sorted(graph[at]):
            if name == start:
                return [*path, name]
            if name not in seen:
                seen.add(name)
                found = circle_from(start, name, [*path, name], seen)
                if found:
                    return found
        return None

    circles = [" -> ".join(found) for name in graph if (found := circle_from(name, name, [name], set()))]
    assert circles == []


def test_no_module_uses_another_modules_underscore_names():
    # A name with a leading underscore belongs to the module that defines it. An access
    # `anything._name` is fine only where this module itself defines `_name` (its own class's
    # attribute or function); an import of `_name` from elsewhere never is.
    offences = []
    for _name, path, tree in MODULES:
        own = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                own.add(node.target.id)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                own.add(node.value)  # __slots__ entries
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                offences += [
                    f"{path.relative_to(ROOT)}:{node.lineno} imports {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
            elif isinstance(node, ast.Attribute):
                attr = node.attr
                if attr.startswith("_") and not attr.startswith("__") and attr not in STANDARD and attr not in own:
                    offences.append(f"{path.relative_to(ROOT)}:{node.lineno} uses {ast.unparse(node)}")
    assert offences == []
