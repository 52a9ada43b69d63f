"""Alembic migrations, installed as ``sqsqlite.migrations`` so they ship inside the wheel."""
