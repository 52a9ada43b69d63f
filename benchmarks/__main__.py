"""python -m benchmarks [--full | --tiny] [--only GROUP ...] [--out DIR]

sqsqlite, the SQLite floor beneath it and two peer queues, measured in the same run on the same
machine. The quick suite takes a few minutes; --full runs every workload at full size (the
backlog of 1,000,000 messages among them; its file is built once and cached in
benchmarks/.cache). Each run prints a table and writes benchmarks/results/latest-<suite>.json.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import suite

# The product's other measurements, each a script of its own (see docs/explanation/performance.md).
SCRIPTS = """\
the other benchmarks, each its own command (--help on each):
  python -m benchmarks.report FILE     a results file as Markdown (--compare BEFORE AFTER: two runs)
  python -m benchmarks.micro           CPU microseconds a message: sqsqlite, its SQL, the client, the floor
  python -m benchmarks.transactions    the outbox and the transactional consume against their floor
  python -m benchmarks.fair            fair queues: quiet tenants' dwell time, a claim's cost
  python -m benchmarks.startup         whole commands as fresh processes
  python -m benchmarks.aio             sqsqlite.aio beside the sync client
  python -m benchmarks.endpoint_bench  `sqsqlite serve` under load, beside moto_server
  python -m benchmarks.server_bench    one boto3 client against serve and moto, by backlog
  python -m benchmarks.hostile         hostile clients against serve and the console
  python -m benchmarks.console_bench   the console and /metrics on a big database
  python -m benchmarks.celery_bench    Celery on sqsqlite:// and two other brokers
  python -m benchmarks.replication     how far a `sqsqlite replicate` replica trails
  python benchmarks/report_bench.py    `sqsqlite report` on 1 and 10 million messages
"""


def main(argv=None) -> int:
    groups = "\n".join(f"  {name:11s} {what}" for name, what in suite.GROUP_HELP.items())
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__.split("\n\n")[1],
        epilog=f"groups (all run unless --only names some):\n{groups}\n\n{SCRIPTS}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="every workload at full size (about 10 minutes)")
    size.add_argument("--tiny", action="store_true", help="a smoke run at tiny sizes (what the test suite runs)")
    p.add_argument("--only", nargs="+", choices=suite.GROUPS, metavar="GROUP", help="run only these groups (listed below)")
    p.add_argument("--out", default=os.path.join(suite.HERE, "results"), help="where the JSON goes (default benchmarks/results)")
    p.add_argument("--no-json", action="store_true", help="print the table only")
    p.add_argument("--label", help="a note stored in the JSON (machine conditions, what changed)")
    args = p.parse_args(argv)
    sizes = suite.TINY if args.tiny else suite.FULL if args.full else suite.QUICK
    suite.run(sizes, None if args.no_json else args.out, groups=tuple(args.only or suite.GROUPS), label=args.label)
    return 0


if __name__ == "__main__":
    sys.exit(main())
