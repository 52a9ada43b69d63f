"""The wheel ships every package of the source tree, so a plain `pip install` has them all."""

import pathlib

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomllib's own origin
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_python_package_in_the_tree_is_listed_for_the_wheel():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = {name: pathlib.Path(path) for name, path in config["package-dir"].items()}
    found = set()
    for init in ROOT.glob("sqsqlite/**/__init__.py"):
        found.add(".".join(init.parent.relative_to(ROOT).parts))
    for name, path in mapped.items():
        for init in (ROOT / path).glob("**/__init__.py"):
            found.add(".".join((name, *init.parent.relative_to(ROOT / path).parts)))
    assert found <= listed, f"not shipped: {sorted(found - listed)}"


def test_every_console_page_and_asset_is_listed_as_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for folder in ("static", "templates"):
        package = f"sqsqlite.console.{folder}"
        assert package in config["packages"]
        patterns = config["package-data"][package]
        for path in (ROOT / "sqsqlite" / "console" / folder).iterdir():
            if path.name != "__pycache__":
                assert any(path.match(p) for p in patterns), f"{path.name} is not shipped"


def test_the_sql_file_the_statements_are_read_from_is_listed_as_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "queries.sql" in config["package-data"]["sqsqlite"]
    assert (ROOT / "sqsqlite" / "queries.sql").is_file()
