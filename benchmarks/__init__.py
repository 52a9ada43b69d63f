"""sqsqlite benchmarks: `python -m benchmarks --help` lists the suite's groups and the other benchmarks.

Measures sqsqlite, the SQLite floor beneath it and two peer queues in the same run on the same
machine; see docs/explanation/performance.md.
"""
