"""Alembic environment: runs on the connection sqsqlite hands over, inside its write lock."""

from alembic import context
from sqlalchemy import create_engine

from sqsqlite.schema import metadata

config = context.config


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        # Plain `alembic -x url=...` use; sqsqlite itself always passes a connection.
        engine = create_engine(config.get_main_option("sqlalchemy.url"))
        with engine.begin() as connection:
            _run(connection)
        return
    _run(connection)


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=True,  # SQLite can't ALTER most things; batch mode copies tables
        transactional_ddl=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
