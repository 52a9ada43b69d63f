"""A queue's recent history as a small SVG chart, drawn on the server: arrivals (sent and moved
in) and completions (deleted) per step as bars, the backlog sampled in each step as a line. No
script and no style sheet of its own: SVG presentation attributes only, which the console's
Content-Security-Policy allows, and nothing to build."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from markupsafe import Markup, escape

# The windows a queue page offers: (query value, label, length ms, step ms).
WINDOWS = (("1h", "last hour, by minute", 3_600_000, 60_000), ("24h", "last 24 hours, by hour", 86_400_000, 3_600_000))
WIDTH, HEIGHT, PAD = 640, 140, 26
ARRIVALS, COMPLETIONS, BACKLOG = "#4C72B0", "#55A868", "#C44E52"


def steps(rows: list[dict], now: int, length: int, step: int) -> list[dict[str, Any]]:
    """The window's steps (oldest first), each with its arrivals, completions and the backlog of
    its newest sample (None without one), from the queue's per-minute history rows."""
    end = now - now % step + step
    start = end - length
    out = [{"start": start + k * step, "arrivals": 0, "completions": 0, "backlog": None, "sampled": -1} for k in range(length // step)]
    for r in rows:
        k = (r["minute"] - start) // step
        if not 0 <= k < len(out):
            continue
        s = out[k]
        s["arrivals"] += r["sent"] + r["moved_in"]
        s["completions"] += r["deleted"]
        if r["visible"] is not None and r["minute"] > s["sampled"]:
            s["sampled"] = r["minute"]
            s["backlog"] = r["visible"] + r["in_flight"] + r["delayed"]
    return out


def svg(points: list[dict[str, Any]], label: str) -> Markup:
    """The chart of ``steps``' output, with its totals said in its title."""
    n = max(1, len(points))
    plot_w, plot_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    top = max([1] + [max(p["arrivals"], p["completions"]) for p in points])
    most = max([1] + [p["backlog"] or 0 for p in points])
    slot = plot_w / n
    bar = max(1.0, slot * 0.4)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="history" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(label)}">',
        f"<title>{escape(label)}</title>",
        f'<rect x="{PAD}" y="{PAD}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#d9dee7"/>',
    ]
    for i, p in enumerate(points):
        x = PAD + i * slot
        for offset, value, color in ((0.0, p["arrivals"], ARRIVALS), (bar, p["completions"], COMPLETIONS)):
            if value:
                h = value / top * plot_h
                parts.append(f'<rect x="{x + offset:.1f}" y="{PAD + plot_h - h:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{color}"/>')
    line = [
        f"{PAD + (i + 0.5) * slot:.1f},{PAD + plot_h - (p['backlog'] / most) * plot_h:.1f}"
        for i, p in enumerate(points)
        if p["backlog"] is not None
    ]
    if line:
        parts.append(f'<polyline points="{" ".join(line)}" fill="none" stroke="{BACKLOG}" stroke-width="2"/>')
    first = datetime.fromtimestamp(points[0]["start"] / 1000, tz=timezone.utc).strftime("%H:%M") if points else ""
    parts += [
        f'<text x="{PAD}" y="{HEIGHT - 8}" font-size="10" fill="#5d6778">{first} UTC</text>',
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - 8}" font-size="10" fill="#5d6778" text-anchor="end">now</text>',
        f'<text x="{PAD}" y="{PAD - 8}" font-size="10" fill="{ARRIVALS}">arrivals</text>',
        f'<text x="{PAD + 52}" y="{PAD - 8}" font-size="10" fill="{COMPLETIONS}">completions (max {top:,} a step)</text>',
        f'<text x="{WIDTH - PAD}" y="{PAD - 8}" font-size="10" fill="{BACKLOG}" text-anchor="end">backlog (max {most:,})</text>',
        "</svg>",
    ]
    return Markup("".join(parts))
