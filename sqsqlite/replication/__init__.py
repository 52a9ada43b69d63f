"""Continuous replication and point-in-time restore of a sqsqlite database with Litestream.

Litestream (https://litestream.io) runs beside the processes that use the database, reads each
transaction from the WAL as it is committed and ships it to a replica: a directory, or an
S3-compatible object store. ``restore`` rebuilds the database from a replica, as of its newest
transaction or of a point in time. This module writes Litestream's configuration from a
database path and replica URLs, finds the ``litestream`` program, and runs it: litestream.py
(Replica, the configuration, the program, the database opened for it without migrating it), replicating.py (:func:`replicate`), restoring.py
(:func:`restore`), command.py (``sqsqlite replicate`` and ``sqsqlite restore``).

Why it cooperates with the engine: sqsqlite's checkpoints are PASSIVE (they never truncate the
WAL; writers start it again only once every reader has let go, and Litestream holds a read
transaction until it has shipped its frames, so it never misses one), and every write transaction waits for a
busy database (for up to ``BUSY_TIMEOUT_SECONDS``), so the short write lock Litestream takes
when it checkpoints delays a writer and never fails it.
"""

from .litestream import Replica, ReplicationError, config_text, litestream_program
from .replicating import replicate
from .restoring import Restored, restore

__all__ = ["Replica", "ReplicationError", "Restored", "config_text", "litestream_program", "replicate", "restore"]
