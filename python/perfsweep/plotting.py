"""Shared pieces of perfsweep's plot commands (perfsweep.plots, scripts/plot_*.py): the Agg backend, the common
command-line options (--out, --dump-data, --dpi, --title), saving every figure as PNG and PDF,
the JSON dump of the plotted values, per-system colours and markers, and error reporting.

Plot commands run with /usr/bin/python3 on a login node: no display, no Jupyter.
"""
import argparse
import json
import math
import os
import re
import sys

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from . import h5 as ps  # noqa: E402

SECONDS_PER_DAY = 86400.0

# One colour per GPU generation, one marker and line style per NVLink domain size; systems not
# in these tables cycle through the rest.
GPU_COLORS = {'A100': '#1f77b4', 'H100': '#9467bd', 'H200': '#ff7f0e', 'B200': '#2ca02c',
              'B200-next': '#d62728'}
EXTRA_COLORS = ['#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf']
NVS_MARKERS = {4: ('o', '-'), 8: ('s', '--'), 16: ('D', '-.'), 32: ('v', ':'), 64: ('^', ':'),
               72: ('P', '-.')}
EXTRA_MARKERS = [('X', '-'), ('*', '--'), ('h', '-.'), ('<', ':')]

# The reference's time components (execution.totals) in stacking order, with legend labels.
TIME_COMPONENTS = [('t_comp', 'Compute'), ('t_mem', 'Memory'), ('t_tp_comm', 'TP comm'),
                   ('t_dp_comm', 'DP comm'), ('t_pp_comm', 'PP comm'), ('t_bubble', 'PP bubble')]
TIME_COLORS = {'t_comp': '#4c72b0', 't_mem': '#8172b2', 't_tp_comm': '#dd8452', 't_dp_comm': '#55a868',
               't_pp_comm': '#937860', 't_bubble': '#c44e52'}


class PlotError(Exception):
    """A user-facing problem (bad input, missing data): printed without a traceback."""


def parser(description, default_out):
    """An ArgumentParser with the options every plot command takes."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', default=default_out, metavar='PATH',
                    help='output path; PATH.png and PATH.pdf are written (a .png/.pdf suffix is dropped) '
                         f'(default: {default_out})')
    ap.add_argument('--dump-data', metavar='FILE.json',
                    help='also write exactly the plotted values as JSON (NaN as null)')
    ap.add_argument('--dpi', type=int, default=200, help='PNG resolution (default: 200)')
    ap.add_argument('--title', help='figure title (default: describes the run)')
    return ap


def out_stem(out):
    stem, ext = os.path.splitext(out)
    return stem if ext.lower() in ('.png', '.pdf') else out


def save(fig, out, dpi):
    """Writes fig as <stem>.png and <stem>.pdf; returns the two paths."""
    stem = out_stem(out)
    if os.path.dirname(stem):
        os.makedirs(os.path.dirname(stem), exist_ok=True)
    paths = [stem + '.png', stem + '.pdf']
    fig.savefig(paths[0], dpi=dpi)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths


def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return None if math.isnan(v) or math.isinf(v) else v
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


def dump(path, data):
    """Writes the plotted values as JSON (numpy values converted, NaN and inf as null)."""
    if not path:
        return
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(_jsonable(data), f, indent=1)
        f.write('\n')


def console_main(name, main):
    """A console script's entry: main_wrapper's exit code as the process's."""
    raise SystemExit(main_wrapper(name, main))


def main_wrapper(name, main):
    """Runs main(argv) and turns expected failures into one error line and exit code 2."""
    try:
        return main(sys.argv[1:]) or 0
    except (PlotError, OSError, ValueError, KeyError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f'{name}: error: {msg}', file=sys.stderr)
        return 2


def _natural(s):
    return [int(t) if t.isdigit() else t for t in re.split(r'(\d+)', s)]


def ordered_systems(path, wanted=None):
    """The system groups of a run, ordered by GPU generation (peak tensor-core FLOP/s when the
    group records it) and then NVLink domain size, as the paper lists them; `wanted` (a list of
    names) selects and orders them explicitly."""
    names = ps.systems(path)
    if wanted:
        missing = [w for w in wanted if w not in names]
        if missing:
            raise PlotError(f'{path}: no system group {", ".join(missing)}; have {", ".join(names)}')
        return list(wanted)
    with ps.open_run(path) as f:
        def key(n):
            a = f[n].attrs
            flops = float(a['matrix_flops_fp16']) if 'matrix_flops_fp16' in a else 0.0
            nvs = int(a['nvs']) if 'nvs' in a else 0
            return (flops, gpu_of(n), nvs, _natural(n))
        return sorted(names, key=key)


def gpu_of(system):
    """'A100' of 'A100-NVS8'."""
    return re.sub(r'-NVS\d+$', '', system)


def nvs_of(system):
    m = re.search(r'-NVS(\d+)$', system)
    return int(m.group(1)) if m else None


def system_styles(names):
    """{system: dict(color, marker, linestyle)}: colour by GPU, marker and line style by NVS."""
    gpus, sizes = [], []
    for n in names:
        if gpu_of(n) not in gpus:
            gpus.append(gpu_of(n))
        if nvs_of(n) not in sizes:
            sizes.append(nvs_of(n))
    extra_c = iter(EXTRA_COLORS * 4)
    colors = {g: GPU_COLORS.get(g) or next(extra_c) for g in gpus}
    extra_m = iter(EXTRA_MARKERS * 4)
    markers = {s: NVS_MARKERS.get(s) or next(extra_m) for s in sizes}
    return {n: {'color': colors[gpu_of(n)], 'marker': markers[nvs_of(n)][0],
                'linestyle': markers[nvs_of(n)][1]} for n in names}


def log2_gpu_axis(ax, n_gpus, label='Number of GPUs'):
    """Log-2 x axis with a tick at every GPU count."""
    ax.set_xscale('log', base=2)
    ticks = sorted(set(int(n) for n in n_gpus))
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks], rotation=45 if len(ticks) > 8 else 0)
    ax.minorticks_off()
    ax.set_xlabel(label)


def dataset_samples(path, override):
    """Samples per training run: the override, else the /model attribute dataset_samples."""
    if override is not None:
        if override <= 0:
            raise PlotError(f'--dataset-samples must be > 0, got {override}')
        return float(override)
    info = ps.run_info(path)
    value = info['model_params'].get('dataset_samples')
    if value is None or float(value) <= 0:
        raise PlotError(f'{path}: the model {info["model"]!r} has no dataset_samples attribute (in /model); '
                        'give the samples per training run with --dataset-samples N')
    return float(value)


STRATEGY_LABELS = {'1d': '1D TP', '2d': '2D TP (SUMMA)', '2d-seqp': '2D TP + sequence parallel'}


def strategy_label(strategy):
    return STRATEGY_LABELS.get(strategy, strategy)


def run_label(path):
    info = ps.run_info(path)
    return f'{info["model"]}, {strategy_label(info["strategy"])}, global batch {info["global_batch_size"]}'


def fmt_count(x):
    """488281250 -> '488M', 28000000 -> '28M', 1.2e12 -> '1.2T'."""
    for div, suffix in ((1e12, 'T'), (1e9, 'G'), (1e6, 'M'), (1e3, 'k')):
        if abs(x) >= div:
            return f'{x / div:.3g}{suffix}'
    return f'{x:g}'


def legend_outside(ax, title='System'):
    """Legend to the right of the axes, so it never hides a curve."""
    ax.legend(title=title, loc='upper left', bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def draw_table(ax, rows, red=None):
    """A table of text on axes `ax` whose column i is centred at x = i, so it lines up with bars
    at x = 0, 1, ... of an axes sharing x. rows: (label, cells); red(row_label, i) -> bool marks
    a cell in red."""
    for r, (label, cells) in enumerate(rows):
        y = len(rows) - 1 - r
        ax.text(-0.6, y, label, ha='right', va='center', fontsize=8.5)
        for i, cell in enumerate(cells):
            ax.text(i, y, cell, ha='center', va='center', fontsize=8.5,
                    color='red' if red and red(label, i) else 'black')
        if r % 2 == 0:
            ax.axhspan(y - 0.5, y + 0.5, color='0.93', zorder=0)
    ax.set_ylim(-0.5, len(rows) - 0.5)
    ax.axis('off')


def style_axes(ax):
    ax.grid(True, which='major', linestyle='--', linewidth=0.5, alpha=0.7)


def set_rc():
    plt.rcParams.update({'font.size': 10, 'axes.titlesize': 11, 'axes.labelsize': 10, 'legend.fontsize': 8.5,
                         'xtick.labelsize': 9, 'ytick.labelsize': 9, 'savefig.bbox': 'tight',
                         'pdf.fonttype': 42})


set_rc()
