#!/usr/bin/env python3
"""Measured against predicted collective times from `comm validate` (its CSV on stdout).

    comm validate --measurements M.csv --calibration C.yaml --nodes 4,16,64,256 > v.csv
    /usr/bin/python3 scripts/plot_comm_validation.py v.csv -o docs/figures/comm_validation.png

Log-log scatter, colour by collective, marker by GPUs per node, with the y = x line and +-15%
band. Several CSVs (e.g. analytical and calibrated) give one panel each.
"""
import argparse
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

COLOURS = {"allreduce": "tab:blue", "allgather": "tab:orange", "reducescatter": "tab:green"}
MARKERS = {1: "o", 2: "s", 4: "^", 8: "D"}


def panel(ax, df, title):
    df = df.dropna(subset=["predicted_s"])
    for (op, gpus), d in df.groupby(["op", "gpus_per_node"]):
        ax.scatter(d.measured_s, d.predicted_s, s=14, alpha=0.75, c=COLOURS.get(op, "tab:gray"),
                   marker=MARKERS.get(int(gpus), "x"), label=f"{op}, {gpus} GPU/node", linewidths=0)
    loglog_identity(ax, df.measured_s, df.predicted_s, 0.15,
                    f"{title}\nmedian {{median}}, p90 {{p90}} ({len(df)} rows)")


def loglog_identity(ax, measured, predicted, band, title):
    """Log-log measured (x) against predicted (y) axes with y = x, a +-band, and a title whose
    {median}, {p90} and {max} fields get the |relative error| statistics."""
    lo = min(measured.min(), predicted.min()) / 1.5
    hi = max(measured.max(), predicted.max()) * 1.5
    x = np.array([lo, hi])
    ax.plot(x, x, "k-", lw=0.8)
    ax.fill_between(x, x / (1 + band), x * (1 + band), color="k", alpha=0.08, lw=0, label=f"±{100 * band:.0f}%")
    err = (predicted / measured - 1).abs()
    ax.set_title(title.format(median=f"{100 * err.median():.1f}%", p90=f"{100 * err.quantile(0.9):.1f}%",
                              max=f"{100 * err.max():.1f}%"), fontsize=10)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured time (s)")
    ax.set_ylabel("predicted time (s)")
    ax.grid(True, which="major", alpha=0.3)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="CSV from `comm validate`")
    ap.add_argument("--title", action="append", help="panel title, one per CSV (default: file name)")
    ap.add_argument("-o", "--out", required=True, help="PNG to write")
    args = ap.parse_args()
    titles = args.title or []
    if titles and len(titles) != len(args.csv):
        sys.exit("give one --title per CSV")
    fig, axes = plt.subplots(1, len(args.csv), figsize=(5.5 * len(args.csv), 5.5), squeeze=False)
    for i, path in enumerate(args.csv):
        panel(axes[0][i], pd.read_csv(path), titles[i] if titles else path)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(args.out, dpi=200)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
