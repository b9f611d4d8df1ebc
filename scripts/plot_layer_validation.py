#!/usr/bin/env python3
"""Measured against predicted layer and block times from `validate layers` (its CSV on stdout).

    validate layers -m M.json --system SYSTEM.yaml > v.csv
    /usr/bin/python3 scripts/plot_layer_validation.py ref.csv cal.csv --title roofline --title calibrated \
        --held-out c03,c06,c09 -o docs/figures/validation

writes PREFIX_layers.png (every layer pass: colour by layer kind, filled forward, open backward)
and PREFIX_block.png (the block's forward + backward per configuration), one panel per CSV, with
the y = x line and a +-10% band; held-out configurations are drawn as stars / named in red.
"""
import argparse
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from plot_comm_validation import loglog_identity  # noqa: E402

KINDS = {"gemm": ("fc1", "fc2", "qkv", "vproj"), "attention": ("fusedla",), "bias": ("fc1-bias", "fc2-bias", "vproj-bias"),
         "activation": ("act1",), "dropout": ("dpr1", "dpr2", "dpr_v"), "norm": ("ln1", "ln2")}
COLOURS = {"gemm": "tab:blue", "attention": "tab:red", "bias": "tab:orange", "activation": "tab:green",
           "dropout": "tab:purple", "norm": "tab:brown"}


def kind_of(layer):
    for k, names in KINDS.items():
        if layer in names:
            return k
    return "other"


def frame(ax, measured, predicted, title, n):
    loglog_identity(ax, measured, predicted, 0.10, f"{title}\nmedian {{median}}, p90 {{p90}}, max {{max}} ({n})")


def layers_panel(ax, df, title, held_out):
    d = df[df.layer != "block"].copy()
    d["kind"] = d.layer.map(kind_of)
    for (kind, p), g in d.groupby(["kind", "pass"]):
        for held, h in g.groupby(g.id.isin(held_out)):
            face = COLOURS.get(kind, "gray") if p == "fwd" else "none"
            ax.scatter(h.measured_s, h.predicted_s, s=40 if held else 16, marker="*" if held else "o",
                       facecolors=face, edgecolors=COLOURS.get(kind, "gray"), linewidths=0.8, alpha=0.8,
                       label=f"{kind} {p}" if not held else None)
    frame(ax, d.measured_s, d.predicted_s, title, f"{len(d)} layer passes")


def block_panel(ax, df, title, held_out):
    d = df[df.layer == "block"].groupby("id")[["measured_s", "predicted_s"]].sum()
    for cid, r in d.iterrows():
        held = cid in held_out
        ax.scatter(r.measured_s, r.predicted_s, s=30, marker="*" if held else "o",
                   color="tab:red" if held else "tab:blue")
        ax.annotate(cid, (r.measured_s, r.predicted_s), fontsize=7, xytext=(3, -8), textcoords="offset points",
                    color="tab:red" if held else "black")
    frame(ax, d.measured_s, d.predicted_s, title, f"{len(d)} blocks, forward + backward")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="CSV from `validate layers`")
    ap.add_argument("--title", action="append", help="panel title, one per CSV (default: file name)")
    ap.add_argument("--held-out", default="", help="comma-separated configuration ids to mark")
    ap.add_argument("-o", "--out", required=True, help="output prefix: PREFIX_layers.png, PREFIX_block.png")
    args = ap.parse_args()
    titles = args.title or args.csv
    if len(titles) != len(args.csv):
        sys.exit("give one --title per CSV")
    held_out = [x for x in args.held_out.split(",") if x]
    frames = [pd.read_csv(p) for p in args.csv]
    for name, draw in (("layers", layers_panel), ("block", block_panel)):
        fig, axes = plt.subplots(1, len(frames), figsize=(5 * len(frames), 5.3), squeeze=False)
        for ax, df, title in zip(axes[0], frames, titles):
            draw(ax, df, title, held_out)
        if name == "layers":
            handles, labels = axes[0][0].get_legend_handles_labels()
            fig.legend(handles, labels, loc="lower center", ncol=7, fontsize=7, frameon=False)
            fig.tight_layout(rect=(0, 0.08, 1, 1))
        else:
            fig.tight_layout()
        out = f"{args.out}_{name}.png"
        fig.savefig(out, dpi=130)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
