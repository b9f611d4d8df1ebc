"""Plots the CSV of the `configs` command: chosen parallel configurations at a fixed GPU count,
side by side (the paper's "rationale" figures of plots_sweep_parallel_configs).

Top: a table naming each configuration (A, B, ...): TP (tp1 x tp2 for the 2-D strategies), PP,
DP, mbs, micro-batches per step, NVLink placement, throughput.
Middle: its time per iteration split into compute, memory, TP/DP/PP communication and pipeline
bubble, stacked in seconds (--percent: in percent of the iteration).
Bottom: memory per GPU split into weights, weight gradients, optimizer states and activations,
against the memory limit (dashed: what the runtime can allocate, the number "fits" uses; the HBM
capacity under the reference runtime). Configurations that do not fit are hatched.

  build/bin/configs ... > configs.csv
  /usr/bin/python3 scripts/plot_configs.py configs.csv --out configs

The CSV has one row per configuration with columns system, n_gpus, strategy, dp, tp, tp1, tp2,
pp, mbs, nb, nv_tp1, nv_tp2, nv_dp, nv_pp, micro_batches, the execution options (recompute, sp,
zero, ..., by name; CSVs before names held codes, which are read too), attention, throughput,
fits, mem_limit, mem_headroom, every totals key (t, mem, t_comp, ..., acts_mem) and hbm_capacity. Rows of several strategies (configs --strat all) or of
lists of options name their strategy and the options that differ in the table.
"""
import csv
import string
import sys

import numpy as np
from matplotlib.patches import Patch

from .. import plotting as pp

REQUIRED = ['n_gpus', 'strategy', 'dp', 'tp', 'pp', 'mbs', 'micro_batches', 'throughput', 'fits', 't', 'mem',
            't_comp', 't_mem', 't_tp_comm', 't_dp_comm', 't_pp_comm', 't_bubble']
MEMORY_PARTS = [('wts_mem', 'weights', '#4c72b0'), ('wts_grad_mem', 'weight gradients', '#64b5cd'),
                ('wts_optimizer_states_mem', 'optimizer states', '#ccb974'), ('acts_mem', 'activations', '#dd8452')]
INT_COLUMNS = ['n_gpus', 'dp', 'tp', 'tp1', 'tp2', 'pp', 'mbs', 'nb', 'nv_tp1', 'nv_tp2', 'nv_dp', 'nv_pp',
               'micro_batches']
# The execution options older CSVs held as codes (model/execution_options.hpp), by code; a column of
# names not listed here (an option added since) is read as text too.
OPTION_NAMES = {'recompute': ['none', 'selective', 'full'], 'sp': ['off', 'on'], 'zero': None, 'interleave': None,
                'layout': ['reference', 'megatron', 'amp'], 'ep': None, 'precision': ['bf16', 'fp8', 'mxfp8'],
                'schedule': ['1f1b', 'zb-h1', 'zb-h2', 'dualpipe'], 'cp_comm': ['p2p', 'all-gather', 'a2a'],
                'offload': ['none', 'optimizer', 'weights', 'activations'], 'offload_percent': None,
                'rank_order': ['tp-cp-ep-dp-pp', 'tp-cp-ep-pp-dp'], 'fp8_params': ['off', 'on']}
TEXT_COLUMNS = ['system', 'strategy', 'attention', 'launch'] + [k for k, v in OPTION_NAMES.items() if v]


def _fits(v):
    t = str(v).strip().lower()
    if t in ('1', 'true', 'yes', '1.0'):
        return True
    if t in ('0', 'false', 'no', '0.0'):
        return False
    raise ValueError(f'fits must be 0/1 or true/false, got {v!r}')


def _number(v):
    try:
        float(v)
        return True
    except ValueError:
        return v.strip() == ''


def _option_columns(cols):
    """The execution options' columns: those OPTION_NAMES lists, then the other text columns."""
    named = [k for k in OPTION_NAMES if k in cols]
    return named + [k for k, v in cols.items() if k not in named and k not in ('system', 'strategy', 'attention', 'launch')
                    and v.dtype.kind == 'U']


def read_csv(path):
    """The CSV as a dict of numpy columns (strategy as strings, fits as bools)."""
    with open(path, newline='') as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        header = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in header]
    if 'mem_limit' not in header and 'hbm_capacity' not in header:
        missing.append('mem_limit')
    if missing:
        raise pp.PlotError(f'{path}: missing column(s) {", ".join(missing)}')
    if not rows:
        raise pp.PlotError(f'{path}: no configurations (only a header)')
    cols = {}
    for c in header:
        vals = [r[c] for r in rows]
        try:
            if c in TEXT_COLUMNS or (c not in REQUIRED and c not in INT_COLUMNS and c != 'fits' and
                                     not all(_number(v) for v in vals)):
                cols[c] = np.array([v.strip() for v in vals])
            elif c == 'fits':
                cols[c] = np.array([_fits(v) for v in vals])
            elif c in INT_COLUMNS:
                cols[c] = np.array([int(float(v)) for v in vals], dtype=np.int64)
            else:
                cols[c] = np.array([float(v) if v.strip() not in ('', 'nan', 'NaN') else np.nan for v in vals])
        except ValueError as e:
            raise pp.PlotError(f'{path}: column {c}: {e}')
    return cols


def select(cols, limit, sort):
    """Row indices to plot: all, or the `limit` fastest fitting ones (then the rest) in CSV order,
    or sorted by throughput with --sort throughput."""
    n = len(cols['t'])
    tp = np.where(np.isfinite(cols['throughput']), cols['throughput'], -np.inf)
    by_speed = sorted(range(n), key=lambda i: (not cols['fits'][i], -tp[i], i))
    keep = by_speed[:limit] if limit and n > limit else list(range(n))
    if sort == 'throughput':
        return [i for i in by_speed if i in set(keep)]
    return sorted(keep)


def names(k):
    letters = string.ascii_uppercase
    return letters[k] if k < 26 else letters[k // 26 - 1] + letters[k % 26]


def option_text(cols, key, i):
    v = str(cols[key][i])
    names = OPTION_NAMES.get(key)
    if not names or not v.lstrip('-').isdigit():
        return v  # a name (or a number option's value) as the CSV gives it
    code = int(v)  # an older CSV's code
    return names[code] if 0 <= code < len(names) else v


def table_rows(cols, idx):
    strategies = [cols['strategy'][i] for i in idx]
    two_d = any(s != '1d' for s in strategies) and 'tp1' in cols
    rows = [('config', [names(k) for k in range(len(idx))])]
    if len(set(strategies)) > 1:
        rows.append(('strategy', strategies))
    if two_d:
        rows.append(('TP (tp1 x tp2)', [f'{cols["tp1"][i]}x{cols["tp2"][i]}' if cols['strategy'][i] != '1d'
                                         else str(cols['tp'][i]) for i in idx]))
        if '2d' in strategies and 'nb' in cols:
            rows.append(('SUMMA nb', [str(cols['nb'][i]) if cols['strategy'][i] == '2d' else '-' for i in idx]))
    else:
        rows.append(('TP', [str(cols['tp'][i]) for i in idx]))
    rows += [('PP', [str(cols['pp'][i]) for i in idx]), ('DP', [str(cols['dp'][i]) for i in idx]),
             ('mbs', [str(cols['mbs'][i]) for i in idx]),
             ('micro-batches', [str(cols['micro_batches'][i]) for i in idx])]
    nv = [k for k in (['nv_tp1', 'nv_tp2'] if two_d else ['nv_tp1']) + ['nv_dp', 'nv_pp'] if k in cols]
    if nv:
        label = 'NVLink ' + '/'.join('tp' if (k == 'nv_tp1' and not two_d) else k[3:] for k in nv)
        rows.append((label, ['/'.join(str(cols[k][i]) for k in nv) for i in idx]))
    # the options that differ between the configurations plotted (lists of options)
    for key in ['attention'] + _option_columns(cols):
        if key in cols and len({str(cols[key][i]) for i in idx}) > 1:
            rows.append((key, [option_text(cols, key, i) for i in idx]))
    rows.append(('samples/s', [f'{cols["throughput"][i]:.4g}' for i in idx]))
    if 'system' in cols and len({cols['system'][i] for i in idx}) > 1:
        rows.insert(1, ('system', [cols['system'][i] for i in idx]))
    rows.append(('fits', ['yes' if cols['fits'][i] else 'no' for i in idx]))
    return rows


def main(argv):
    ap = pp.parser(__doc__, 'configs')
    ap.add_argument('file', metavar='FILE.csv', help='CSV written by the `configs` command')
    ap.add_argument('--percent', action='store_true', help='stack percent of the iteration time, not seconds')
    ap.add_argument('--sort', choices=['csv', 'throughput'], default='csv',
                    help='order of the configurations (default: as in the CSV)')
    ap.add_argument('--limit', type=int, default=30,
                    help='plot at most this many configurations, the fastest fitting ones (default: 30; 0: all)')
    args = ap.parse_args(argv)

    cols = read_csv(args.file)
    idx = select(cols, args.limit, args.sort)
    if len(idx) < len(cols['t']):
        print(f'plot_configs: note: plotting the {len(idx)} fastest of {len(cols["t"])} configurations '
              '(--limit 0 for all)', file=sys.stderr)
    x = np.arange(len(idx))
    fits = cols['fits'][idx]
    rows = table_rows(cols, idx)
    time = {k: cols[k][idx] for k, _ in pp.TIME_COMPONENTS}
    total = sum(time.values())
    stacked = {k: 100.0 * v / total for k, v in time.items()} if args.percent else time
    mem = {k: cols[k][idx] for k, _, _ in MEMORY_PARTS if k in cols}
    # what "fits" used: the runtime's memory limit (an older CSV: the HBM capacity, the reference's)
    capacity = cols['mem_limit'][idx] if 'mem_limit' in cols else cols['hbm_capacity'][idx]

    fig = pp.plt.figure(figsize=(max(7.0, 2.2 + 0.55 * len(idx)), 8.2))
    gs = fig.add_gridspec(3, 1, height_ratios=[0.25 * len(rows), 3.4, 2.4], hspace=0.12)
    ax_t = fig.add_subplot(gs[0])
    ax = fig.add_subplot(gs[1], sharex=ax_t)
    ax_m = fig.add_subplot(gs[2], sharex=ax_t)
    pp.draw_table(ax_t, rows, red=lambda label, k: label == 'fits' and not fits[k])

    bottom = np.zeros(len(idx))
    for key, label in pp.TIME_COMPONENTS:
        h = stacked[key]
        bars = ax.bar(x, h, 0.62, bottom=bottom, color=pp.TIME_COLORS[key], label=label)
        for b, ok in zip(bars, fits):
            if not ok:
                b.set_hatch('///')
                b.set_alpha(0.45)
        if args.percent:
            for i in range(len(idx)):
                if h[i] >= 6:
                    ax.text(x[i], bottom[i] + h[i] / 2, f'{h[i]:.0f}', ha='center', va='center', fontsize=7.5,
                            color='white')
        bottom += h
    ax.set_ylabel('Share of iteration time (%)' if args.percent else 'Time per iteration (s)')
    if args.percent:
        ax.set_ylim(0, 100)
    else:
        ax.set_ylim(0, 1.08 * float(np.nanmax(bottom)))
    ax.grid(True, axis='y', linestyle='--', linewidth=0.5, alpha=0.6)
    # plain patches (the bars of a configuration that does not fit are hatched), top of the stack first
    handles = [Patch(facecolor=pp.TIME_COLORS[k], label=label) for k, label in pp.TIME_COMPONENTS][::-1]
    if not fits.all():
        handles.append(Patch(facecolor='white', edgecolor='0.3', hatch='///', label='does not fit'))
    ax.legend(handles=handles, loc='upper left', bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
              fontsize=8)
    pp.plt.setp(ax.get_xticklabels(), visible=False)

    bottom = np.zeros(len(idx))
    if mem:
        for key, label, color in MEMORY_PARTS:
            if key in mem:
                bars = ax_m.bar(x, mem[key], 0.62, bottom=bottom, color=color, label=label)
                for b, ok in zip(bars, fits):
                    if not ok:
                        b.set_hatch('///')
                        b.set_alpha(0.45)
                bottom += mem[key]
    else:
        ax_m.bar(x, cols['mem'][idx], 0.62, color='#4c72b0', label='memory')
    ax_m.step(np.r_[x - 0.5, x[-1] + 0.5], np.r_[capacity, capacity[-1]], where='post', color='black',
              linestyle='--', linewidth=1.2, label='memory limit')
    ax_m.set_ylim(0, 1.12 * max(float(np.nanmax(bottom if mem else cols['mem'][idx])), float(np.nanmax(capacity))))
    ax_m.set_ylabel('Memory per GPU (GB)')
    ax_m.set_xlim(-0.5, len(idx) - 0.5)
    ax_m.set_xticks(x)
    ax_m.set_xticklabels([names(k) for k in range(len(idx))])
    ax_m.set_xlabel('Configuration')
    ax_m.grid(True, axis='y', linestyle='--', linewidth=0.5, alpha=0.6)
    handles, labels = ax_m.get_legend_handles_labels()
    cap_line = [h for h, lbl in zip(handles, labels) if lbl == 'memory limit']
    parts = [Patch(facecolor=c, label=lbl) for k, lbl, c in MEMORY_PARTS if k in mem][::-1] if mem else \
        [Patch(facecolor='#4c72b0', label='memory')]
    ax_m.legend(handles=cap_line + parts, loc='upper left', bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)

    n_gpus = sorted(set(int(v) for v in cols['n_gpus'][idx]))
    strategies = sorted(set(cols['strategy'][idx]))
    ax_t.set_title(args.title or f'Configurations at {", ".join(map(str, n_gpus))} GPUs, '
                                 f'{", ".join(pp.strategy_label(s) for s in strategies)}')
    paths = pp.save(fig, args.out, args.dpi)

    pp.dump(args.dump_data, {
        'figure': 'configs', 'file': args.file, 'rows': idx, 'labels': [names(k) for k in range(len(idx))],
        'n_gpus': cols['n_gpus'][idx], 'strategy': cols['strategy'][idx], 'fits': fits,
        'table': {label: cells for label, cells in rows},
        'stacked': 'percent' if args.percent else 'seconds', 'time': stacked,
        'memory': mem if mem else {'mem': cols['mem'][idx]}, 'mem_limit': capacity})
    print('\n'.join(paths))
    return 0


def cli():
    pp.console_main('plot_configs', main)


if __name__ == '__main__':
    cli()
