"""Entry point of the ``sqsqlite`` console script."""


def main() -> None:  # replaced by the click application
    raise SystemExit("sqsqlite CLI: not built yet")
