"""The report as a terminal table, JSON, CSV, Parquet and a PNG chart; all from one Report."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Set as AbstractSet
from datetime import datetime, timedelta, timezone

from .archive import ArchiveFigures
from .figures import AGE_LABELS, Report
from .history import STEP_COUNTERS, QueueHistory


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
    lines += _history_lines(report)
    lines += _archive_lines(report)
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


def forecast_text(h: QueueHistory) -> str:
    """The drain forecast in words, with its method (history.py has the definitions)."""
    if h.forecast == "unknown":
        return "no backlog sample in the window"
    if h.forecast == "empty":
        return "empty"
    if h.forecast == "drains":
        assert h.drain_minutes is not None
        return f"drains in {age(h.drain_minutes * 60_000)} at the last hour's net rate"
    if h.forecast == "flat":
        return f"holds at {h.backlog:,}: the last hour's departures equal its arrivals"
    return f"grows by {h.growth_per_hour:,} an hour at the last hour's net rate"


def _signed(n: int) -> str:
    return f"+{n:,}" if n > 0 else f"{n:,}"


# What the report says in place of the history when the file keeps none.
HISTORY_OFF = "no history is kept: the file's history is off (turn it on with: sqsqlite history --retention 14d)"


def _history_lines(report: Report) -> list[str]:
    if not report.history_until_ms:
        return []
    step = "minute" if report.history_step_ms == 60_000 else "hour"
    lines = [
        "",
        f"History {iso(report.history_since_ms)} to {iso(report.history_until_ms)}, by {step}: arrivals (sent + moved in), "
        "completions (deleted) and departures (everything that left) in the last hour, the change on the hour before, "
        "and the drain forecast at the last hour's net rate",
    ]
    if not report.history_retention_s and not report.history:
        return lines + [HISTORY_OFF]
    if not report.history:
        return lines + ["no history in the window"]
    lines += _grid(
        ["queue", "arrivals/h", "trend", "completions/h", "trend", "departures/h", "backlog", "oldest", "forecast"],
        [
            [
                h.queue,
                f"{h.arrivals_last_hour:,}",
                _signed(h.arrivals_trend),
                f"{h.completions_last_hour:,}",
                _signed(h.completions_trend),
                f"{h.departures_last_hour:,}",
                "-" if h.backlog is None else f"{h.backlog:,}",
                "-" if h.oldest_age_s is None else age(h.oldest_age_s * 1000),
                forecast_text(h),
            ]
            for h in report.history
        ],
        right={1, 2, 3, 4, 5, 6},
    )
    spiked = [(h.queue, sp) for h in report.history for sp in h.spikes]
    if spiked:
        lines += [
            "",
            f"Spikes: a {step} with dead-lettering or redeliveries over {3} times its usual (the window's median) and at least 10",
        ]
        lines += _grid(
            ["queue", step, "what", "count", "usual"],
            [[q, iso(sp.step_ms), sp.counter.replace("_", "-"), sp.count, sp.usual] for q, sp in spiked],
            right={3, 4},
        )
    return lines


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _archive_lines(report: Report) -> list[str]:
    """The archives' section: none at all when no queue keeps an archive and none is in the
    window (a file older than the archive among them)."""
    if not report.archive_queues and not report.archive:
        return []
    lines = [
        "",
        f"Archive {iso(report.history_since_ms)} to {iso(report.history_until_ms)}: messages deleted (and purged) from "
        "each queue that keeps an archive, the time from send to delete and the receives before it",
    ]
    if not report.archive:
        return lines + ["no deletes archived in the window"]
    return lines + _grid(
        ["queue", "deletes", "purged", "p50 to delete", "p90 to delete", "p99 to delete", "mean receives", "max receives"],
        [
            [q.queue, f"{q.deletes:,}", f"{q.purged:,}", age(q.p50_ms), age(q.p90_ms), age(q.p99_ms), _mean(q.mean_receives)]
            + ["-" if q.max_receives is None else q.max_receives]
            for q in report.archive
        ],
        right=set(range(1, 8)),
    )


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
    history_cols = [("queue", S), ("step_ms", N), ("step", S), *((c, N) for c in STEP_COUNTERS), ("backlog", N), ("oldest_age_s", N)]
    history = [
        {"queue": h.queue, "step_ms": st.start_ms, "step": iso(st.start_ms), **{c: getattr(st, c) for c in STEP_COUNTERS}}
        | {"backlog": st.backlog, "oldest_age_s": st.oldest_age_s}
        for h in report.history
        for st in h.steps
    ]
    summary_cols = [
        ("queue", S),
        *((c, N) for c in ("arrivals", "completions", "departures", "arrivals_last_hour", "completions_last_hour")),
        *((c, N) for c in ("departures_last_hour", "arrivals_trend", "completions_trend", "backlog", "oldest_age_s")),
        ("forecast", S),
        ("drain_minutes", N),
        ("growth_per_hour", N),
        ("spikes", N),
    ]
    summary = [{c: getattr(h, c) for c, _ in summary_cols if c != "spikes"} | {"spikes": len(h.spikes)} for h in report.history]
    spikes = [{"queue": h.queue, **vars(sp)} for h in report.history for sp in h.spikes]
    figure_cols = [
        *((c, N) for c in ("deletes", "purged", "p50_ms", "p90_ms", "p99_ms")),
        ("mean_receives", "float64"),
        ("max_receives", N),
    ]

    def figures_of(f: ArchiveFigures) -> dict:
        return {c: getattr(f, c) for c, _ in figure_cols}

    archive = [{"queue": q.queue, "hour_ms": h.start_ms, "hour": iso(h.start_ms), **figures_of(h)} for q in report.archive for h in q.hours]
    archive_queues = [{"queue": q.queue, **figures_of(q)} for q in report.archive]
    return {
        "archive": ([("queue", S), ("hour_ms", N), ("hour", S), *figure_cols], archive),
        "archive_queues": ([("queue", S), *figure_cols], archive_queues),
        "history": (history_cols, history),
        "history_queues": (summary_cols, summary),
        "history_spikes": ([("queue", S), ("counter", S), ("step_ms", N), ("count", N), ("usual", N)], spikes),
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
    written += history_charts(report, out)
    if report.archive:
        path = os.path.join(out, "archive.png")
        archive_chart(report, path)
        written.append(path)
    return written


def archive_chart(report: Report, path: str, limit: int = 12) -> None:
    """One chart per queue (the ``limit`` with most deletes in the window): deletes per hour as
    bars, the hour's p50 and p99 time from send to delete as lines, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = sorted(report.archive, key=lambda q: (-q.deletes, q.queue))[:limit]
    fig, axes = plt.subplots(len(shown), 1, figsize=(8, 2.6 * len(shown)), squeeze=False)
    for ax, q in zip(axes.flat, shown):
        x = [h.start_ms / 86_400_000 for h in q.hours]  # matplotlib's dates: days since 1970
        ax.bar(x, [h.deletes for h in q.hours], width=0.8 / 24, color="#55A868", label="deletes")
        ax.xaxis_date()
        ax.set_ylabel("deletes an hour", fontsize=8)
        ax.tick_params(labelsize=7)
        line = ax.twinx()
        for p, color in ((50, "#4C72B0"), (99, "#C44E52")):
            points = [(t, getattr(h, f"p{p}_ms") / 1000) for t, h in zip(x, q.hours) if getattr(h, f"p{p}_ms") is not None]
            line.plot([t for t, _ in points], [v for _, v in points], color=color, marker=".", label=f"p{p} to delete")
        line.set_ylabel("seconds", fontsize=8)
        line.tick_params(labelsize=7)
        line.set_ylim(bottom=0)
        handles = ax.get_legend_handles_labels()[0] + line.get_legend_handles_labels()[0]
        ax.legend(handles, [str(hd.get_label()) for hd in handles], fontsize=7, loc="upper left")
        ax.set_title(
            f"{q.queue}: {q.deletes:,} deletes, p90 {age(q.p90_ms)} from send, {_mean(q.mean_receives)} receives on average", fontsize=9
        )
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


HISTORY_CHARTS = 50  # the busiest queues' charts, by arrivals over the window


def history_charts(report: Report, out: str) -> list[str]:
    """A PNG per queue (the HISTORY_CHARTS with most arrivals in the window): arrivals and
    completions per step as bars, the backlog sampled in each step as a line."""
    import re

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = sorted(report.history, key=lambda h: (-h.arrivals, h.queue))[:HISTORY_CHARTS]
    written = []
    step = "minute" if report.history_step_ms == 60_000 else "hour"
    for h in shown:
        # Matplotlib's dates are days since 1970 as floats: the bars' positions and width in days.
        x = [st.start_ms / 86_400_000 for st in h.steps]
        width = report.history_step_ms / 86_400_000 * 0.4
        fig, ax = plt.subplots(figsize=(8, 3.2))
        ax.bar([t - width / 2 for t in x], [st.sent + st.moved_in for st in h.steps], width=width, color="#4C72B0", label="arrivals")
        ax.bar([t + width / 2 for t in x], [st.deleted for st in h.steps], width=width, color="#55A868", label="completions")
        ax.xaxis_date()
        ax.set_ylabel(f"messages a {step}", fontsize=8)
        ax.tick_params(labelsize=7)
        line = ax.twinx()
        line.plot(
            [t for t, st in zip(x, h.steps) if st.backlog is not None],
            [st.backlog for st in h.steps if st.backlog is not None],
            color="#C44E52",
            marker=".",
            label="backlog",
        )
        line.set_ylabel("backlog", fontsize=8)
        line.tick_params(labelsize=7)
        line.set_ylim(bottom=0)
        handles = ax.get_legend_handles_labels()[0] + line.get_legend_handles_labels()[0]
        ax.legend(handles, [str(hd.get_label()) for hd in handles], fontsize=7, loc="upper left")
        ax.set_title(f"{h.queue}: {forecast_text(h)}", fontsize=9)
        fig.autofmt_xdate()
        fig.tight_layout()
        path = os.path.join(out, "history_" + re.sub(r"[^A-Za-z0-9_.-]", "_", h.queue) + ".png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
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
