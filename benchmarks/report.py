"""python -m benchmarks.report RESULTS.json: the figures as a Markdown table (for docs/explanation/performance.md)."""

from __future__ import annotations

import json
import sys

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
        out.append(
            f"| {r['workload']} | {r['system']} | {sync} | {fmt_rate(r['rate_median'])} | "
            f"{fmt_rate(r['rate_min'])}-{fmt_rate(r['rate_max'])} | {fmt_ms(r['p50_ms'])} | {fmt_ms(r['p99_ms'])} | {'-' if r.get('cpu_rate_median') is None else fmt_rate(r['cpu_rate_median'])} | {notes} |"
        )
    out += ["", "| target | measured (wall clock) | per CPU second | goal | |", "|---|--:|--:|---|---|"]
    for t in data["targets"]:
        out.append(f"| {t['target']} | {t['value']} | {t.get('cpu_ratio', '-')} | {t['goal']} | {'met' if t['met'] else '**missed**'} |")
    for b in data.get("bounds", ()):  # runs before session 22 have none
        means = b.get("means", "the most plain calls can reach")  # runs before 2026-11-27 named none
        out.append(f"| bound, not a target: {b['bound']} | {b['value']} | {b.get('cpu_value') or '-'} | - | {means} |")
    return "\n".join(out)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(markdown(json.load(f)))
