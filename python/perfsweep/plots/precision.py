"""bf16 against fp8, system by system: one configuration of one model estimated in both
precisions (`estimate --json --precision bf16|fp8` under a runtime that runs FP8), as tokens/s
per GPU with the FP8 speedup, and memory per GPU against what the runtime can allocate.

  /usr/bin/python3 scripts/plot_precision.py --estimate build/bin/estimate \\
      --systems H100-calibrated,H200-calibrated,B200 --model llama3_70b \\
      --args "--runtime megatron --nvs 8 --tp 4 --pp 4 --dp 32 --mbs 1 --global-batch-size 2048" \\
      --out docs/figures/precision_llama3_70b

Every number comes from `estimate`; docs/fp8.md says which are measured and which carried over.
"""
import json
import shlex
import subprocess

import numpy as np

from .. import plotting as pp

PRECISIONS = [('bf16', '#4c72b0'), ('fp8', '#dd8452')]


def estimate(binary, system, model, args, precision):
    cmd = [binary, '--model', model, '--system', system, '--precision', precision, '--json', '-q'] + shlex.split(args)
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise pp.PlotError(f'{" ".join(cmd)} exited {run.returncode}: {run.stderr.strip()}')
    return json.loads(run.stdout)


def main(argv):
    ap = pp.parser(__doc__.splitlines()[0], 'precision')
    ap.add_argument('--estimate', default='build/bin/estimate', help='the estimate binary')
    ap.add_argument('--systems', required=True, help='comma-separated systems (names or YAML files)')
    ap.add_argument('--model', required=True)
    ap.add_argument('--args', default='', help='the configuration, as estimate flags')
    a = ap.parse_args(argv)
    systems = [s for s in a.systems.split(',') if s]
    data = {p: {'tokens_per_s_per_gpu': [], 'mem': [], 'mem_limit': [], 't': []} for p, _ in PRECISIONS}
    for s in systems:
        for p, _ in PRECISIONS:
            r = estimate(a.estimate, s, a.model, a.args, p)
            data[p]['tokens_per_s_per_gpu'].append(r['efficiency']['tokens_per_s_per_gpu'])
            data[p]['mem'].append(r['totals']['mem'])
            data[p]['mem_limit'].append(r['totals'].get('mem_limit', float('nan')))
            data[p]['t'].append(r['totals']['t'])
    pp.set_rc()
    fig, (ax_t, ax_m) = pp.plt.subplots(1, 2, figsize=(11, 4.2))
    x = np.arange(len(systems))
    width = 0.38
    for i, (p, color) in enumerate(PRECISIONS):
        ax_t.bar(x + (i - 0.5) * width, data[p]['tokens_per_s_per_gpu'], width, color=color, label=p)
        ax_m.bar(x + (i - 0.5) * width, data[p]['mem'], width, color=color, label=p)
    for j in range(len(systems)):
        speedup = data['bf16']['t'][j] / data['fp8']['t'][j]
        top = max(data['bf16']['tokens_per_s_per_gpu'][j], data['fp8']['tokens_per_s_per_gpu'][j])
        ax_t.annotate(f'{speedup:.2f}x', (x[j], top), ha='center', va='bottom', fontsize=9)
        ax_m.hlines(data['bf16']['mem_limit'][j], x[j] - width, x[j] + width, colors='k', linestyles='dashed')
    for ax, label in ((ax_t, 'tokens/s per GPU'), (ax_m, 'memory per GPU (GB; dashed: usable)')):
        ax.set_xticks(x)
        ax.set_xticklabels(systems)
        ax.set_ylabel(label)
        pp.style_axes(ax)
    ax_t.legend(title='precision')
    fig.suptitle(a.title or f'{a.model}: bf16 and fp8 ({a.args})', fontsize=9)
    fig.tight_layout()
    for path in pp.save(fig, a.out, a.dpi):
        print(path)
    pp.dump(a.dump_data, {'systems': systems, **data})


def cli():
    pp.console_main('plot_precision', main)


if __name__ == '__main__':
    cli()
