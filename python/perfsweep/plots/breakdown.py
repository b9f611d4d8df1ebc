"""The fastest configuration of one system at each GPU count, and where its time goes (the
paper's parallel-configuration figure).

Top: a table of the optimal configuration per GPU count: tensor parallelism TP (tp1 x tp2 for
the 2-D strategies, and SUMMA's nb for 2d), pipeline stages PP, data parallelism DP, micro-batch
size mbs, micro-batches per step (global_batch / dp / mbs), how many GPUs of each group share an
NVLink domain (nv_*), and the memory used per GPU against the HBM capacity.
Bottom: the time per iteration of that configuration split into compute, memory, TP/DP/PP
communication and the pipeline bubble, as stacked bars in percent of the iteration (with the
iteration time, log scale, on the right axis), or in seconds with --absolute.

  /usr/bin/python3 scripts/plot_breakdown.py outputs/exec_1d_gpt3_1T.h5 --system B200-NVS8
"""
import numpy as np

from .. import h5 as ps
from .. import plotting as pp


def compute(path, system):
    info = ps.run_info(path)
    strategy = info['strategy']
    with ps.open_run(path) as f:
        if system not in f or system in ps.NON_SYSTEM_GROUPS:
            raise pp.PlotError(f'{path}: no system group {system!r}; have {", ".join(ps.systems(path))}')
        g = f[system]
        n, tp, rows = ps.best_of_group(g)
        if not len(n):
            raise pp.PlotError(f'{path}: {system} has no feasible configuration at any GPU count')
        top = g['top']
        col = {k: np.asarray(top[k][()])[rows] for k in top.keys() if k != 'count'}
        capacity = float(g.attrs['hbm_capacity']) if 'hbm_capacity' in g.attrs else None
    gbs = info['global_batch_size']
    config = {k: col[k].astype(np.int64) for k in ps.CONFIG_KEYS[strategy] + ps.NV_KEYS[strategy]}
    # context parallelism's degree and NVLink share, in files that have the columns
    config.update({k: col[k].astype(np.int64) for k in ps.OMITTED_AT if k in col})
    config['micro_batches'] = (gbs // config['dp']) // config['mbs']
    time = {k: col[k].astype(float) for k, _ in pp.TIME_COMPONENTS}
    total = sum(time.values())
    percent = {k: 100.0 * v / total for k, v in time.items()}
    return {'strategy': strategy, 'global_batch_size': gbs, 'n_gpus': n, 'throughput': tp,
            'config': config, 'mem': col['mem'], 'hbm_capacity': capacity, 't': col['t'],
            'time': time, 'percent': percent}


def table_rows(d):
    """(label, cells) rows of the configuration table."""
    c, strategy = d['config'], d['strategy']
    rows = []
    if strategy == '1d':
        rows.append(('TP', [str(v) for v in c['tp']]))
    else:
        rows.append(('TP (tp1 x tp2)', [f'{a}x{b}' for a, b in zip(c['tp1'], c['tp2'])]))
        if 'nb' in c:
            rows.append(('SUMMA nb', [str(v) for v in c['nb']]))
    if 'cp' in c and any(c['cp'] > 1):
        rows.append(('CP (NVLink)', [f'{a} ({b})' for a, b in zip(c['cp'], c['nv_cp'])]))
    rows.append(('PP', [str(v) for v in c['pp']]))
    rows.append(('DP', [str(v) for v in c['dp']]))
    rows.append(('mbs', [str(v) for v in c['mbs']]))
    rows.append(('micro-batches', [str(v) for v in c['micro_batches']]))
    nv = ps.NV_KEYS[strategy]
    label = 'NVLink ' + '/'.join(k[3:] for k in nv)
    rows.append((label, ['/'.join(str(c[k][i]) for k in nv) for i in range(len(d['n_gpus']))]))
    cap = d['hbm_capacity']
    rows.append(('memory GB' + (f' (of {cap:g})' if cap else ''), [f'{m:.0f}' for m in d['mem']]))
    return rows


def main(argv):
    ap = pp.parser(__doc__, 'breakdown')
    ap.add_argument('file', help='HDF5 output of `sweep` (schema perfsweep/1)')
    ap.add_argument('--system', required=True, help='system group, e.g. B200-NVS8')
    ap.add_argument('--absolute', action='store_true', help='stack seconds per iteration instead of percent')
    args = ap.parse_args(argv)

    d = compute(args.file, args.system)
    n = d['n_gpus']
    x = np.arange(len(n))
    rows = table_rows(d)

    fig = pp.plt.figure(figsize=(max(7.0, 1.6 + 0.62 * len(n)), 6.6))
    gs = fig.add_gridspec(2, 1, height_ratios=[0.26 * len(rows), 4.2], hspace=0.08)
    ax_t = fig.add_subplot(gs[0])
    ax = fig.add_subplot(gs[1], sharex=ax_t)
    cap = d['hbm_capacity']
    pp.draw_table(ax_t, rows, red=lambda label, i: label.startswith('memory') and cap and d['mem'][i] > cap)

    bottom = np.zeros(len(n))
    values = d['time'] if args.absolute else d['percent']
    for key, label in pp.TIME_COMPONENTS:
        h = values[key]
        ax.bar(x, h, 0.62, bottom=bottom, color=pp.TIME_COLORS[key], label=label)
        if not args.absolute:
            for i in range(len(n)):
                if h[i] >= 6:
                    ax.text(x[i], bottom[i] + h[i] / 2, f'{h[i]:.0f}', ha='center', va='center', fontsize=7.5,
                            color='white')
        bottom += h
    ax.set_xlim(-0.5, len(n) - 0.5)
    ax.set_xticks(x)
    ax.set_xticklabels([str(v) for v in n])
    ax.set_xlabel('Number of GPUs')
    handles, labels = ax.get_legend_handles_labels()
    if args.absolute:
        ax.set_ylabel('Time per iteration (s)')
    else:
        ax.set_ylabel('Share of iteration time (%)')
        ax.set_ylim(0, 100)
        ax2 = ax.twinx()
        line, = ax2.plot(x, d['t'], color='black', marker='o', markersize=4, linewidth=1.2, linestyle='--')
        ax2.set_yscale('log')
        ax2.set_ylabel('Time per iteration (s), log scale')
        handles.append(line)
        labels.append('iteration time')
    ax.legend(handles[::-1][:len(handles)], labels[::-1][:len(labels)], loc='upper left',
              bbox_to_anchor=(1.13 if not args.absolute else 1.01, 1.0), borderaxespad=0.0, fontsize=8)
    ax.grid(True, axis='y', linestyle='--', linewidth=0.5, alpha=0.6)
    info = ps.run_info(args.file)
    ax_t.set_title(args.title or f'Fastest configuration on {args.system}: {pp.run_label(args.file)}')
    paths = pp.save(fig, args.out, args.dpi)

    pp.dump(args.dump_data, {
        'figure': 'breakdown', 'file': args.file, 'system': args.system, 'model': info['model'],
        'strategy': d['strategy'], 'global_batch_size': d['global_batch_size'], 'n_gpus': n,
        'config': d['config'], 'mem': d['mem'], 'hbm_capacity': d['hbm_capacity'],
        'table': {label: cells for label, cells in rows},
        'stacked': 'seconds' if args.absolute else 'percent',
        'time': d['time'], 'percent': d['percent'], 't': d['t']})
    print('\n'.join(paths))
    return 0


def cli():
    pp.console_main('plot_breakdown', main)


if __name__ == '__main__':
    cli()
