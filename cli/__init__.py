"""The ``sqsqlite`` command line, installed as ``sqsqlite.cli``."""
