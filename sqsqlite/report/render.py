"""The report as a terminal table, JSON, CSV, Parquet and a PNG chart; all from one Report."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Set as AbstractSet
from datetime import datetime, timedelta, timezone

from .figures import AGE_LABELS, Report


def iso(ms: int) -> str:
    # In integers: through a float, 9999-12-31T23:59:59.999Z came out .998.
    moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def age(ms: int | None) -> str:
    """A short human duration: 850ms, 42s, 12m 5s, 4h 12m, 3d 4h; -1h 0m for a message sent
    after the report's instant (its timestamp ahead of a clock that stepped back)."""
    if ms is None:
        return "-"
    if ms < 0:
        return "-" + age(-ms)
    if ms < 1000:
        return f"{ms}ms"
    s = ms // 1000
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m {s}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h {m}m"
    d, h = divmod(h, 24)
    return f"{d}d {h}h"


def _grid(headers: list[str], rows: list[list], right: AbstractSet[int] = frozenset()) -> list[str]:
    cells = [headers] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = []
    for k, r in enumerate(cells):
        out.append("  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def table(report: Report, groups: int = 10) -> str:
    """The terminal rendering: one summary table, then a section per figure family."""
    lines = [f"sqsqlite report: {report.database}", f"as of {iso(report.as_of_ms)} ({report.as_of_ms} ms)", ""]
    if not report.queues:
        return "\n".join(lines + ["no queues"]) + "\n"
    rows = []
    for q in report.queues:
        dlq = (
            "-" if q.dead_letter_queue is None else f"{q.dead_letter_queue} ({'?' if q.dead_letter_depth is None else q.dead_letter_depth})"
        )
        rows.append(
            [
                q.queue,
                q.visible,
                q.in_flight,
                q.delayed,
                q.backlog,
                age(q.oldest_age_ms),
                age(q.age_p50_ms),
                age(q.age_p90_ms),
                age(q.age_p99_ms),
                q.expiring_1h,
                q.expiring_24h,
                dlq,
            ]
        )
    lines += _grid(
        [
            "queue",
            "visible",
            "in flight",
            "delayed",
            "backlog",
            "oldest",
            "p50 age",
            "p90 age",
            "p99 age",
            "expire<1h",
            "expire<24h",
            "dead-letter queue (depth)",
        ],
        rows,
        right=set(range(1, 11)),
    )
    lines += ["", "Age of the backlog (from the original enqueue time)"]
    lines += _grid(["queue"] + list(AGE_LABELS), [[q.queue] + q.age_histogram for q in report.queues], right=set(range(1, 9)))
    lines += ["", "Receive counts (receives x messages)"]
    for q in report.queues:
        hist = "  ".join(f"{k}x{v}" for k, v in q.receive_counts.items()) or "-"
        lines.append(f"  {q.queue}: {hist}")
    tops = [
        [q.queue, t.message_id, t.receive_count, age(t.age_ms), t.state.replace("_", " ")] for q in report.queues for t in q.top_received
    ]
    if report.top:  # --top 0 asks for none: no section, rather than one saying none were received
        lines += ["", f"Most received messages (top {report.top} per queue, poison candidates)"]
        lines += _grid(["queue", "message id", "receives", "age", "state"], tops, right={2}) if tops else ["  none received yet"]
    dlqs = [q for q in report.queues if q.dead_letter_sources or q.dead_lettered_from]
    lines += ["", "Dead-letter queues"]
    if dlqs:
        rows = []
        for q in dlqs:
            frm = ", ".join(f"{k} {v}" for k, v in q.dead_lettered_from.items()) or "-"
            rows.append([q.queue, ", ".join(q.dead_letter_sources) or "-", q.backlog, frm])
        lines += _grid(["dead-letter queue", "source queues", "depth", "messages by source"], rows, right={2})
    else:
        lines.append("  none")
    standard = [q for q in report.queues if not q.fifo]
    if standard:
        lines += ["", "Fair queues: noisy message groups, and the messages of quiet groups (and of no group)"]
        lines += _grid(
            ["queue", "noisy groups", "visible", "in flight", "delayed", "oldest"],
            [
                [
                    q.queue,
                    q.noisy_groups,
                    q.visible_in_quiet_groups,
                    q.in_flight_in_quiet_groups,
                    q.delayed_in_quiet_groups,
                    age(q.oldest_age_in_quiet_groups_ms),
                ]
                for q in standard
            ],
            right={1, 2, 3, 4},
        )
    for q in report.queues:
        if q.fifo:
            shown = q.groups[:groups]
            more = f" ({len(q.groups) - len(shown)} more)" if len(q.groups) > len(shown) else ""
            lines += ["", f"FIFO {q.queue}: backlog per message group, {len(q.groups)} group{'' if len(q.groups) == 1 else 's'}{more}"]
            if shown:
                lines += _grid(
                    ["group", "visible", "in flight", "delayed", "backlog", "oldest"],
                    [[g.group_id, g.visible, g.in_flight, g.delayed, g.backlog, age(g.oldest_age_ms)] for g in shown],
                    right={1, 2, 3, 4},
                )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- flat tables (CSV, Parquet)


def tables(report: Report) -> dict[str, tuple[list[tuple[str, str]], list[dict]]]:
    """The report as flat tables: name -> (columns with Arrow type names, rows)."""
    queue_cols = [
        ("queue", "string"),
        ("fifo", "bool"),
        ("retention_seconds", "int64"),
        ("visible", "int64"),
        ("in_flight", "int64"),
        ("delayed", "int64"),
        ("backlog", "int64"),
        ("dead_letter_queue", "string"),
        ("dead_letter_depth", "int64"),
        ("oldest_age_ms", "int64"),
        ("age_p50_ms", "int64"),
        ("age_p90_ms", "int64"),
        ("age_p99_ms", "int64"),
        ("expiring_1h", "int64"),
        ("expiring_24h", "int64"),
        ("noisy_groups", "int64"),
        ("visible_in_quiet_groups", "int64"),
        ("in_flight_in_quiet_groups", "int64"),
        ("delayed_in_quiet_groups", "int64"),
        ("oldest_age_in_quiet_groups_ms", "int64"),
    ]
    bucket_cols = [(f"age_{label}", "int64") for label in AGE_LABELS]
    queues, counts, tops, groups, dead = [], [], [], [], []
    for q in report.queues:
        row = {c: getattr(q, c) for c, _ in queue_cols}
        row.update({c: n for (c, _), n in zip(bucket_cols, q.age_histogram)})
        queues.append(row)
        counts += [{"queue": q.queue, "receive_count": k, "messages": v} for k, v in q.receive_counts.items()]
        tops += [{"queue": q.queue, "rank": i + 1, **vars(t)} for i, t in enumerate(q.top_received)]
        groups += [{"queue": q.queue, **vars(g)} for g in q.groups]
        for src in sorted(set(q.dead_letter_sources) | set(q.dead_lettered_from)):
            dead.append(
                {
                    "dead_letter_queue": q.queue,
                    "source_queue": src,
                    "redrive_configured": src in q.dead_letter_sources,
                    "messages": q.dead_lettered_from.get(src, 0),
                }
            )
    S, N = "string", "int64"
    return {
        "queues": (queue_cols + bucket_cols, queues),
        "receive_counts": ([("queue", S), ("receive_count", N), ("messages", N)], counts),
        "top_received": ([("queue", S), ("rank", N), ("message_id", S), ("receive_count", N), ("age_ms", N), ("state", S)], tops),
        "groups": (
            [("queue", S), ("group_id", S), ("visible", N), ("in_flight", N), ("delayed", N), ("backlog", N), ("oldest_age_ms", N)],
            groups,
        ),
        "dead_letter_sources": ([("dead_letter_queue", S), ("source_queue", S), ("redrive_configured", "bool"), ("messages", N)], dead),
    }


# A cell a spreadsheet would read as a formula: a group id is any text a producer chose.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _spreadsheet_safe(value: object) -> object:
    """A CSV cell as text a spreadsheet shows, not runs (OWASP's rule: a leading quote)."""
    return "'" + value if isinstance(value, str) and value.startswith(_FORMULA_START) else value


def write(report: Report, out: str, parquet: bool = False) -> list[str]:
    """Write report.json, one CSV per table, optionally Parquet, and the age chart; returns the
    paths written."""
    os.makedirs(out, exist_ok=True)
    written = []
    path = os.path.join(out, "report.json")
    with open(path, "w") as f:
        json.dump({"as_of": iso(report.as_of_ms), **report.to_dict()}, f, indent=2)
        f.write("\n")
    written.append(path)
    flat = tables(report)
    for name, (cols, rows) in flat.items():
        path = os.path.join(out, f"{name}.csv")
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=[c for c, _ in cols])
            w.writeheader()
            w.writerows({k: _spreadsheet_safe(v) for k, v in row.items()} for row in rows)
        written.append(path)
    if parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq

        for name, (cols, rows) in flat.items():
            schema = pa.schema([(c, getattr(pa, t)() if t != "bool" else pa.bool_()) for c, t in cols])
            path = os.path.join(out, f"{name}.parquet")
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
            written.append(path)
    path = os.path.join(out, "age_distribution.png")
    chart(report, path)
    written.append(path)
    return written


def chart(report: Report, path: str, limit: int = 12) -> None:
    """One bar chart per queue of its backlog's age distribution (the ``limit`` largest
    backlogs), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")  # no display: the chart is a file
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    shown = sorted((q for q in report.queues if q.backlog), key=lambda q: (-q.backlog, q.queue))[:limit]
    n = max(1, len(shown))
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.8 * rows), squeeze=False)
    for ax in axes.flat[len(shown) :]:
        ax.axis("off")
    if not shown:
        axes[0][0].text(0.5, 0.5, "no backlog", ha="center", va="center")
    for ax, q in zip(axes.flat, shown):
        bars = ax.bar(range(len(AGE_LABELS)), q.age_histogram, color="#4C72B0")
        ax.bar_label(bars, fontsize=7)
        ax.set_xticks(range(len(AGE_LABELS)), AGE_LABELS, fontsize=7, rotation=30)
        ax.set_title(f"{q.queue}: {q.backlog} messages, p90 {age(q.age_p90_ms)}", fontsize=9)
        ax.set_ylabel("messages", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.margins(y=0.15)
    fig.suptitle(f"Backlog age (from original enqueue) as of {iso(report.as_of_ms)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
