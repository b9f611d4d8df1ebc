#!/usr/bin/env python3
"""The tables of docs/validation.md's "NVIDIA's published H100 runs" and "... B200 and GB200 runs": each
published row predicted by `estimate` exactly as test/python/test_published_nemo.py and
test_published_blackwell.py run it (their mapping and commands), printed as Markdown.

usage: published_tables.py ESTIMATE SOURCE_DIR h100|blackwell
"""
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "python"))
import test_published_blackwell as blackwell  # noqa: E402
import test_published_nemo as h100  # noqa: E402


def rows_of(source_dir, name):
    with open(os.path.join(source_dir, "test", "data", "published", name)) as f:
        return list(csv.DictReader(f))


def h100_table(estimate, source_dir):
    print("| run | container | GPUs | GBS | TP/PP/CP/VP | tokens/s/GPU measured | nemo (default) | error | memory / usable "
          "| megatron | error | megatron_tp_overlap | error | memory / usable |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    errs = {r: [] for r in h100.RUNTIMES}
    tflops = {r: [] for r in h100.RUNTIMES}
    fits = {r: 0 for r in h100.RUNTIMES}
    rows = rows_of(source_dir, "nemo_h100.csv")
    for row in rows:
        measured = float(row["tokens_per_s_per_gpu"])
        cells = []
        for runtime in h100.RUNTIMES:
            tok, tf, fit, mem = h100.figures(h100.estimate_json(h100.command(estimate, source_dir, row, runtime)))
            errs[runtime].append(tok / measured - 1)
            tflops[runtime].append(tf / float(row["model_tflops_per_gpu"]) - 1)
            fits[runtime] += bool(fit)
            cells.append((tok, tok / measured - 1, mem))
        vp = row["vp"] if row["vp"] not in ("", "n/a") else "1"
        name = row["model"] + (f" (FSDP {row['fsdp']})" if row["fsdp"] not in ("", "0") else "")
        (n, en, mn), (m, em, _), (o, eo, mo) = cells
        print(f"| {name} | {row['container']} | {row['gpus']} | {row['gbs']} | {row['tp']}/{row['pp']}/{row['cp']}/{vp} "
              f"| {measured:.0f} | {n:.0f} | {en:+.1%} | {mn:.0%} | {m:.0f} | {em:+.1%} | {o:.0f} | {eo:+.1%} | {mo:.0%} |")
    print()
    print("| runtime | median \\|error\\| | median signed error | worst | fits | model TFLOP/s: median \\|error\\| |")
    print("|---|---|---|---|---|---|")
    for runtime in h100.RUNTIMES:
        e = errs[runtime]
        worst = max(e, key=abs)
        print(f"| {runtime} | {statistics.median(abs(x) for x in e):.1%} | {statistics.median(e):+.1%} | {worst:+.1%} "
              f"| {fits[runtime]} of {len(rows)} | {statistics.median(abs(x) for x in tflops[runtime]):.1%} |")


def blackwell_table(estimate, source_dir):
    print("| run | precision | GPUs | TP/PP/CP/VP (FSDP) | measured | predicted | error | fits |")
    print("|---|---|---|---|---|---|---|---|")
    errs = {}
    for row in rows_of(source_dir, "nemo_blackwell.csv"):
        tok, _, fit, mem, _ = blackwell.predict(blackwell.command(estimate, source_dir, row))
        measured = float(row["tokens_per_s_per_gpu"])
        e = tok / measured - 1
        kind = "MXFP8" if blackwell.mxfp8(row) else "FP8"
        errs.setdefault(row["system"], []).append(e)
        errs.setdefault((row["system"], kind), []).append(e)
        fsdp = f" (FSDP {row['fsdp']})" if row["fsdp"] not in ("", "0") else ""
        precision = row["precision"] or "(none)"
        print(f"| `{row['id']}` | {precision} | {row['gpus']} | {row['tp']}/{row['pp']}/{row['cp']}/{row['vp']}{fsdp} "
              f"| {measured:.0f} | {tok:.0f} | {e:+.1%} | {'yes' if fit else f'no ({mem:.0%})'} |")
    print()
    for key, e in errs.items():
        print(f"{key}: median {statistics.median(e):+.1%} over {len(e)} rows (min {min(e):+.1%}, max {max(e):+.1%})")


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in ("h100", "blackwell"):
        sys.exit(__doc__)
    estimate, source_dir, which = sys.argv[1:]
    (h100_table if which == "h100" else blackwell_table)(estimate, source_dir)


if __name__ == "__main__":
    main()
