#!/usr/bin/python3
"""Draws bench/locality_bench's JSON (bench/locality.sh) as one PNG of four panels: inserts/s
into ticketd's RocksDB store, bytes per key on disk and written while inserting, generation
cost per ID, and bytes per key as binary and as text. UUIDv4 is drawn apart as the baseline (no ticketd).

Usage: bench/locality_plot.py LOCALITY.json [OUT.png (docs/images/locality.png)]
Needs python3-matplotlib (bench/locality.sh installs it)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend is chosen first

LABELS = {"ticket": "ticket", "snowflake": "Snowflake", "uuidv7": "UUIDv7", "ulid": "ULID",
          "uuidv4": "UUIDv4\n(baseline)"}
COLOURS = {"ticket": "#1f77b4", "snowflake": "#2ca02c", "uuidv7": "#9467bd", "ulid": "#8c564b",
           "uuidv4": "#7f7f7f"}


def bars(ax, schemes, values, title, unit, fmt):
    names = [s["scheme"] for s in schemes]
    drawn = ax.bar(range(len(names)), values, color=[COLOURS.get(n, "#333333") for n in names])
    for i, n in enumerate(names):
        if n == "uuidv4":
            drawn[i].set_hatch("//")
            drawn[i].set_edgecolor("white")
    ax.set_xticks(range(len(names)), [LABELS.get(n, n) for n in names], fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(unit, fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    ax.bar_label(drawn, labels=[fmt(v) for v in values], fontsize=7, padding=2)
    ax.set_ylim(0, max(values) * 1.18 if values and max(values) > 0 else 1)
    ax.spines[["top", "right"]].set_visible(False)


def grouped(ax, schemes, series, title, unit, log=False):
    """Bars side by side per scheme: series is [(label, values, colour, label format)]; a log
    scale when the series differ by orders of magnitude."""
    names = [s["scheme"] for s in schemes]
    width = 0.8 / len(series)
    top = 0
    for i, (label, values, colour, fmt) in enumerate(series):
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(names))]
        drawn = ax.bar(xs, values, width, label=label, color=colour)
        ax.bar_label(drawn, labels=[fmt(v) for v in values], fontsize=7, padding=2)
        top = max([top] + values)
    ax.set_xticks(range(len(names)), [LABELS.get(n, n) for n in names], fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(unit, fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    if log:
        ax.set_yscale("log")
        ax.set_ylim(1, top * 4)
    else:
        ax.set_ylim(0, top * 1.18 if top > 0 else 1)
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    ax.spines[["top", "right"]].set_visible(False)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    out = sys.argv[2] if len(sys.argv) > 2 else "docs/images/locality.png"
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    schemes = doc["schemes"]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), dpi=100)
    bars(axes[0][0], schemes, [s["inserts_per_s"] / 1e3 for s in schemes],
         f"insert throughput ({doc['batch']:,} keys per synced commit)", "thousand keys/s",
         lambda v: f"{v:,.0f}")
    grouped(axes[0][1], schemes,
            [("on disk after the flush", [s["disk_bytes_per_key"] for s in schemes], "#55a868",
              lambda v: f"{v:.1f}"),
             ("written while inserting (WAL, flushes, compactions)",
              [s["written_bytes_per_key"] for s in schemes], "#c44e52", lambda v: f"{v:.0f}")],
            "RocksDB bytes per key (key + 8-byte value)", "bytes (log scale)", log=True)
    bars(axes[1][0], schemes, [s["generate_ns_per_id"] for s in schemes],
         f"generation cost (median of {doc['runs']} runs)", "ns per ID", lambda v: f"{v:.0f}")
    # One Snowflake worker issues at most 4,096 IDs per 1 ms tick: a floor, not a CPU cost.
    floor_ns = 1e6 / 4096
    axes[1][0].axhline(floor_ns, ls="--", lw=0.8, color="#333333", zorder=3)
    axes[1][0].text(1.45, floor_ns * 1.04, "Snowflake floor: 4,096 IDs/ms",
                    fontsize=7, color="#333333", zorder=3)
    grouped(axes[1][1], schemes,
            [("binary", [s["binary_bytes"] for s in schemes], "#4c72b0", lambda v: f"{v:g}"),
             ("text (mean)", [s["text_bytes_mean"] for s in schemes], "#dd8452",
              lambda v: f"{v:.1f}")],
            "bytes per key: binary and canonical text", "bytes")
    fig.suptitle(f"Index locality: {doc['keys']:,} keys per scheme into ticketd's RocksDB store "
                 f"({doc['cores']} cores, {doc['date_utc'][:10]})", fontsize=11)
    fig.tight_layout()
    fig.savefig(out)
    print(f"locality_plot: wrote {out}")


if __name__ == "__main__":
    main()
