"""python -m benchmarks [--full] [--only GROUP ...] [--out DIR]

The quick suite takes about two minutes; --full runs every workload at full size (the backlog
of 1,000,000 messages among them; its file is built once and cached in benchmarks/.cache).
"""

from __future__ import annotations

import argparse
import os
import sys

from . import suite


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[1])
    p.add_argument("--full", action="store_true", help="every workload at full size (about 10 minutes)")
    p.add_argument("--tiny", action="store_true", help="a smoke run at tiny sizes (what the test suite runs)")
    p.add_argument("--only", nargs="+", choices=suite.GROUPS, help="run only these groups")
    p.add_argument("--out", default=os.path.join(suite.HERE, "results"), help="where the JSON goes (default benchmarks/results)")
    p.add_argument("--no-json", action="store_true", help="print the table only")
    p.add_argument("--label", help="a note stored in the JSON (machine conditions, what changed)")
    args = p.parse_args(argv)
    sizes = suite.TINY if args.tiny else suite.FULL if args.full else suite.QUICK
    suite.run(sizes, None if args.no_json else args.out, groups=tuple(args.only or suite.GROUPS), label=args.label)
    return 0


if __name__ == "__main__":
    sys.exit(main())
