"""sqsqlite benchmarks: `python -m benchmarks` (quick) or `python -m benchmarks --full`.

Measures sqsqlite, the SQLite floor beneath it and two peer queues in the same run on the same
machine; see docs/explanation/performance.md.
"""
