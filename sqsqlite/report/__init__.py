"""Backlog analytics: the ``sqsqlite report`` command, its figures and the Spark job.

- :mod:`.figures`: what every figure means, and the oracle computing them in plain Python;
- :mod:`.history`, :mod:`.archive`: the per-minute history's figures and the archives' (deletes,
  time from send to delete, receives before it), per queue and step;
- :mod:`.snapshot`: one consistent copy of the database to read, taken without blocking writers;
- :mod:`.tempdir`: the temporary directory the report works in, and what is wrong with it;
- :mod:`.spark`: the PySpark job reading that copy over JDBC in partitions;
- :mod:`.render`: terminal table, JSON, CSV, Parquet and PNG output;
- :mod:`.cli`: the click command ``report``.
"""

from .figures import Report
from .figures import compute as oracle

__all__ = ["Report", "oracle"]
