"""python -m benchmarks.report RESULTS.json: the figures as a Markdown table (for
docs/explanation/performance.md). With --compare BEFORE AFTER: each row of two runs side by side,
the ratio of their medians (wall clock and per CPU second), to show a change's cost."""

from __future__ import annotations

import argparse
import json

from .harness import SHOWN_EXTRAS, fmt_ms, fmt_rate


def markdown(data: dict) -> str:
    m = data["machine"]
    out = [
        f"{data['suite']} suite, {data['started']}: {m['cores']} cores ({m['cpu']}), Python {m['python']}, "
        f"SQLite {m['sqlite']}, {m['filesystem']}; load average {m['loadavg_at_start']} at start, "
        f"{m.get('loadavg_at_end')} at end.",
        "",
        "| workload | system | durability | msgs/s (median) | min-max | p50 ms | p99 ms | msgs/CPU-s | notes |",
        "|---|---|---|--:|--:|--:|--:|--:|---|",
    ]
    for r in data["rows"]:
        notes = ", ".join(f"{k}={v}" for k, v in r["extra"].items() if k in SHOWN_EXTRAS)
        sync = r["settings"].split("synchronous=")[-1]
        varied = ", ".join(f"{k} {r['extra'][k]}" for k in VARIED if k in r["extra"])
        out.append(
            f"| {r['workload']}{f' ({varied})' if varied else ''} | {r['system']} | {sync} | {fmt_rate(r['rate_median'])} | "
            f"{fmt_rate(r['rate_min'])}-{fmt_rate(r['rate_max'])} | {fmt_ms(r['p50_ms'])} | {fmt_ms(r['p99_ms'])} | {'-' if r.get('cpu_rate_median') is None else fmt_rate(r['cpu_rate_median'])} | {notes} |"
        )
    out += ["", "| target | measured (wall clock) | per CPU second | goal | |", "|---|--:|--:|---|---|"]
    for t in data["targets"]:
        out.append(f"| {t['target']} | {t['value']} | {t.get('cpu_ratio', '-')} | {t['goal']} | {'met' if t['met'] else '**missed**'} |")
    for b in data.get("bounds", ()):  # runs before session 22 have none
        means = b.get("means", "the most plain calls can reach")  # runs before 2026-11-27 named none
        out.append(f"| bound, not a target: {b['bound']} | {b['value']} | {b.get('cpu_value') or '-'} | - | {means} |")
    return "\n".join(out)


# The extras that tell apart rows of one workload and system.
VARIED = ("stored", "groups", "attributes")


def compare(before: dict, after: dict) -> str:
    """The rows of two runs side by side: medians and after/before ratios (above 1: faster)."""

    def key(r: dict) -> tuple:  # rows of one workload apart by what their extras vary (a backlog's size, FIFO groups)
        return (r["workload"], r["system"], r["settings"], *(str(r["extra"].get(k)) for k in VARIED))

    old = {key(r): r for r in before["rows"]}
    out = [
        f"before: {before.get('label') or before['machine'].get('commit')}, {before['started']}; "
        f"after: {after.get('label') or after['machine'].get('commit')}, {after['started']}.",
        "",
        "| workload | system | durability | before msgs/s | after msgs/s | after/before | per CPU-s after/before |",
        "|---|---|---|--:|--:|--:|--:|",
    ]
    for r in after["rows"]:
        b = old.get(key(r))
        if b is None:
            continue
        cpu = "-" if not (r.get("cpu_rate_median") and b.get("cpu_rate_median")) else f"{r['cpu_rate_median'] / b['cpu_rate_median']:.2f}"
        varied = ", ".join(f"{k} {r['extra'][k]}" for k in VARIED if k in r["extra"])
        out.append(
            f"| {r['workload']}{f' ({varied})' if varied else ''} | {r['system']} | {r['settings'].split('synchronous=')[-1]} | {fmt_rate(b['rate_median'])} | "
            f"{fmt_rate(r['rate_median'])} | {r['rate_median'] / b['rate_median'] if b['rate_median'] else float('nan'):.2f} | {cpu} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__)
    parser.add_argument("results", nargs="?", help="a results file (benchmarks/results/latest-full.json)")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="two results files, side by side")
    args = parser.parse_args(argv)
    if args.compare:
        files = [json.load(open(path)) for path in args.compare]
        print(compare(*files))
    elif args.results:
        with open(args.results) as f:
            print(markdown(json.load(f)))
    else:
        parser.error("give a results file, or --compare BEFORE AFTER")


if __name__ == "__main__":
    main()
