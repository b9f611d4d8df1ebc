#!/usr/bin/env python3
"""Measured against predicted for the training-run validation sets (`validate megatron|vtrain|
nanotron` CSVs), one figure per set: the diagonal is exact, the band +-10%; runs used to fit
(fit = 1) are drawn as open markers. nanotron adds a panel of allocated memory.

    plot_cluster_validation.py SET CSV --out PATH      (writes PATH.png and PATH.pdf)
"""
import argparse
import csv
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

UNITS = {"iteration_s": "iteration time (s)", "tflops_per_gpu": "TFLOP/s per GPU",
         "tokens_per_s_per_gpu": "tokens/s per GPU"}


def value(text):
    return float(text) if text not in ("", None) else math.nan


def diagonal(ax, values, log):
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
    p.add_argument("set", choices=["megatron", "vtrain", "nanotron"])
    p.add_argument("csv")
    p.add_argument("--out", required=True, help="output path without extension")
    a = p.parse_args()
    rows = list(csv.DictReader(open(a.csv)))
    rows = [r for r in rows if r["rel_err"] != ""]
    if a.set in ("nanotron", "megatron"):
        fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    else:
        fig, axes = plt.subplots(1, 1, figsize=(5.5, 5))
        axes = [axes]

    if a.set == "megatron":
        panels = [("korthikanti-", "Korthikanti et al. 2022, Table 5 (Selene)", "iteration time (s)", True),
                  ("narayanan-", "Narayanan et al. 2021, Table 1 (Selene)", "TFLOP/s per GPU", False)]
        for ax, (prefix, title, unit, log) in zip(axes, panels):
            part = [r for r in rows if r["id"].startswith(prefix)]
            m, q = [value(r["measured"]) for r in part], [value(r["predicted"]) for r in part]
            ax.scatter(m, q, color="tab:blue", s=28)
            for r, x, y in zip(part, m, q):
                ax.annotate(r["id"].split("-", 1)[1], (x, y), fontsize=7, xytext=(4, -3), textcoords="offset points")
            diagonal(ax, m + q, log=log)
            ax.set_xlabel("measured " + unit)
            ax.set_ylabel("predicted " + unit)
            ax.set_title(title + "\n" + summary(value(r["rel_err"]) for r in part), fontsize=8)
    elif a.set == "vtrain":
        ax = axes[0]
        for fit, marker, label in [("0", "o", "held out"), ("1", "o", "fit (every third run)")]:
            part = [r for r in rows if r["fit"] == fit]
            ax.scatter([value(r["measured"]) for r in part], [value(r["predicted"]) for r in part], s=18,
                       marker=marker, facecolors="tab:blue" if fit == "0" else "none", edgecolors="tab:blue",
                       label=label)
        diagonal(ax, [value(r["measured"]) for r in rows] + [value(r["predicted"]) for r in rows], log=True)
        ax.set_xlabel("measured iteration time (s)")
        ax.set_ylabel("predicted iteration time (s)")
        held = [value(r["rel_err"]) for r in rows if r["fit"] == "0"]
        ax.set_title("vTrain ground truth (A100, Megatron-DeepSpeed)\n" + summary(held), fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
    else:
        ax, mem = axes
        success = [r for r in rows if r["status_measured"] == "Success" and r["fit"] == "0"]
        fitted = [r for r in rows if r["status_measured"] == "Success" and r["fit"] == "1"]
        measured = [value(r["measured"]) for r in success]
        predicted = [value(r["predicted"]) for r in success]
        ax.scatter([value(r["measured"]) for r in fitted], [value(r["predicted"]) for r in fitted], s=5, alpha=0.4,
                   facecolors="none", edgecolors="tab:blue", label="fit (every third run)")
        ax.scatter(measured, predicted, s=5, alpha=0.4, color="tab:blue", label="held out")
        diagonal(ax, measured + predicted, log=True)
        ax.set_xlabel("measured tokens/s per GPU")
        ax.set_ylabel("predicted tokens/s per GPU")
        ax.set_title("nanotron on H100 (successful held-out runs)\n" + summary(value(r["rel_err"]) for r in success),
                     fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
        mm = [value(r["measured_mem_gb"]) for r in success]
        pm = [value(r["predicted_mem_gb"]) for r in success]
        mem.scatter(mm, pm, s=5, alpha=0.5, color="tab:green")
        diagonal(mem, mm + pm, log=True)
        mem.set_xlabel("measured allocated memory (GiB)")
        mem.set_ylabel("predicted allocated memory (GiB)")
        judged = [r for r in csv.DictReader(open(a.csv))
                  if r["status_measured"] in ("Success", "OOM") and r["fit"] == "0"]
        right = sum((r["fits_predicted"] == "1") == (r["status_measured"] == "Success") for r in judged)
        mem.set_title(f"allocated memory: {summary(b / m - 1 for m, b in zip(mm, pm))}\n"
                      f"OOM vs fits right: {right}/{len(judged)} = {right / len(judged):.1%}", fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=150)
    fig.savefig(a.out + ".pdf")


if __name__ == "__main__":
    main()
