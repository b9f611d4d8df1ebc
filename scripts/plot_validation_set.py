#!/usr/bin/env python3
"""Measured against predicted for a validation set, from the rows CSV `validate runs DIR -o ROWS.csv`
writes (one variant: the rows as given unless --variant): one point per row, coloured by GPU and
marked by precision, open where the row is in the fit part; the diagonal is exact, the band +-10%.
A set with a memory column adds a panel of predicted against measured memory.

    plot_validation_set.py ROWS.csv --out PATH [--title TEXT] [--variant NAME] [--linear]
        (writes PATH.png and PATH.pdf)
"""
import argparse
import csv
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MARKERS = ["o", "s", "^", "D", "v", "P"]


def value(text):
    return float(text) if text not in ("", None) else math.nan


def diagonal(ax, values, log):
    values = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
    lo, hi = min(values), max(values)
    if log:
        lo, hi = lo / 1.5, hi * 1.5
    else:
        pad = 0.08 * (hi - lo)
        lo, hi = lo - pad, hi + pad
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    ax.fill_between([lo, hi], [lo * 0.9, hi * 0.9], [lo * 1.1, hi * 1.1], color="grey", alpha=0.2, lw=0)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")


def summary(errors):
    errors = sorted(abs(e) for e in errors)
    if not errors:
        return "no runs"
    n = len(errors)
    median = errors[n // 2] if n % 2 else 0.5 * (errors[n // 2 - 1] + errors[n // 2])
    return f"held out: n={n}, mean |err| {sum(errors) / n:.1%}, median {median:.1%}, worst {errors[-1]:.1%}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("rows")
    p.add_argument("--out", required=True, help="output path without extension")
    p.add_argument("--title", default="", help="the figure's title (default: the quantity)")
    p.add_argument("--variant", default="default")
    p.add_argument("--linear", action="store_true", help="linear axes (default: logarithmic)")
    a = p.parse_args()
    rows = [r for r in csv.DictReader(open(a.rows, newline="")) if r["variant"] == a.variant]
    with_error = [r for r in rows if r["rel_err"] != ""]
    memory = "measured_memory" in rows[0] and any(r["measured_memory"] for r in rows)
    fig, axes = plt.subplots(1, 2 if memory else 1, figsize=(11 if memory else 5.5, 5))
    axes = list(axes) if memory else [axes]
    ax = axes[0]
    gpus = sorted({r.get("gpu", "") for r in with_error})
    precisions = sorted({r.get("precision", "") for r in with_error})
    colours = {g: f"C{i}" for i, g in enumerate(gpus)}
    markers = {q: MARKERS[i % len(MARKERS)] for i, q in enumerate(precisions)}
    small = len(with_error) < 200
    for g in gpus:
        for q in precisions:
            for part, fill in (("held-out", True), ("fit", False)):
                sel = [r for r in with_error if r.get("gpu", "") == g and r.get("precision", "") == q and r["part"] == part]
                if not sel:
                    continue
                ax.scatter([value(r["measured"]) for r in sel], [value(r["predicted"]) for r in sel],
                           s=28 if small else 6, alpha=1 if small else 0.4, marker=markers[q],
                           facecolors=colours[g] if fill else "none", edgecolors=colours[g],
                           label=f"{g} {q}" + ("" if part == "held-out" else " (fit part)"))
    values = [value(r["measured"]) for r in with_error] + [value(r["predicted"]) for r in with_error]
    diagonal(ax, values, log=not a.linear)
    quantity = rows[0]["quantity"]
    ax.set_xlabel(f"measured {quantity}")
    ax.set_ylabel(f"predicted {quantity}")
    held = [value(r["rel_err"]) for r in with_error if r["part"] == "held-out"]
    ax.set_title((a.title or quantity) + "\n" + summary(held), fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    if memory:
        mem = axes[1]
        sel = [r for r in rows if r["part"] == "held-out" and r["measured_memory"] and r["predicted_memory"]]
        mm, pm = [value(r["measured_memory"]) for r in sel], [value(r["predicted_memory"]) for r in sel]
        mem.scatter(mm, pm, s=5, alpha=0.5, color="tab:green")
        diagonal(mem, mm + pm, log=True)
        mem.set_xlabel("measured memory")
        mem.set_ylabel("predicted memory")
        judged = [r for r in rows if r["part"] == "held-out" and r.get("outcome") in ("trained", "oom") and r["fits"]]
        right = sum((r["fits"] == "yes") == (r["outcome"] == "trained") for r in judged)
        title = f"memory: {summary(b / m - 1 for m, b in zip(mm, pm))}"
        if judged:
            title += f"\nfit verdicts right: {right}/{len(judged)} = {right / len(judged):.1%}"
        mem.set_title(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=150)
    fig.savefig(a.out + ".pdf")


if __name__ == "__main__":
    main()
