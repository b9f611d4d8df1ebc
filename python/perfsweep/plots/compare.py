"""One parallelization strategy against another across systems: the speed-up of run A over run
B, i.e. best_throughput_A(n) / best_throughput_B(n), per system at every GPU count where both
runs have a feasible configuration (the paper's strategy-comparison figure). Above 1, A trains
faster.

  /usr/bin/python3 scripts/plot_compare.py outputs/exec_2d_gpt3_1T.h5 outputs/exec_1d_gpt3_1T.h5

Both files must be runs of the same model and global batch size (--allow-mismatch to compare
anyway); systems present in only one of them are skipped with a note.
"""
import sys

import numpy as np

from .. import h5 as ps
from .. import plotting as pp


def compute(path_a, path_b, systems=None):
    names_b = set(ps.systems(path_b))
    series, skipped = {}, []
    for name in pp.ordered_systems(path_a, systems):
        if name not in names_b:
            skipped.append(name)
            continue
        na, ta = ps.best(path_a, name)
        nb, tb = ps.best(path_b, name)
        common = sorted(set(int(x) for x in na) & set(int(x) for x in nb))
        if not common:
            skipped.append(name)
            continue
        a = dict(zip((int(x) for x in na), ta))
        b = dict(zip((int(x) for x in nb), tb))
        series[name] = {'n_gpus': np.array(common, dtype=np.int64),
                        'throughput_a': np.array([a[n] for n in common]),
                        'throughput_b': np.array([b[n] for n in common])}
        series[name]['ratio'] = series[name]['throughput_a'] / series[name]['throughput_b']
    skipped += sorted(names_b - set(ps.systems(path_a)))
    if not series:
        raise pp.PlotError(f'{path_a} and {path_b} have no system with feasible configurations at a common GPU count')
    return series, skipped


def main(argv):
    ap = pp.parser(__doc__, 'compare')
    ap.add_argument('file_a', metavar='A.h5', help='run whose speed-up is plotted (numerator)')
    ap.add_argument('file_b', metavar='B.h5', help='run to compare against (denominator)')
    ap.add_argument('--systems', nargs='+', metavar='NAME', help='system groups to plot, in this order')
    ap.add_argument('--allow-mismatch', action='store_true',
                    help='compare runs of different models or global batch sizes')
    args = ap.parse_args(argv)

    ia, ib = ps.run_info(args.file_a), ps.run_info(args.file_b)
    for key in ('model', 'global_batch_size'):
        if ia[key] != ib[key] and not args.allow_mismatch:
            raise pp.PlotError(f'{key} differs: {ia[key]} in {args.file_a}, {ib[key]} in {args.file_b} '
                               '(--allow-mismatch to compare anyway)')
    series, skipped = compute(args.file_a, args.file_b, args.systems)
    if skipped:
        print(f'plot_compare: note: not in both runs with a common feasible GPU count: {", ".join(skipped)}',
              file=sys.stderr)
    la, lb = pp.strategy_label(ia['strategy']), pp.strategy_label(ib['strategy'])
    if la == lb:
        la, lb = 'A', 'B'

    fig, ax = pp.plt.subplots(figsize=(8.5, 5.0))
    styles = pp.system_styles(list(series))
    for name, s in series.items():
        st = styles[name]
        ax.plot(s['n_gpus'], s['ratio'], label=name, color=st['color'], marker=st['marker'],
                linestyle=st['linestyle'], markersize=5, linewidth=1.6)
    ax.axhline(1.0, color='black', linewidth=0.9)
    pp.log2_gpu_axis(ax, [n for s in series.values() for n in s['n_gpus']])
    ax.set_ylabel(f'Speed-up of {la} over {lb}\n(best throughput ratio)')
    pp.style_axes(ax)
    pp.legend_outside(ax)
    model = ia['model'] if ia['model'] == ib['model'] else f'{ia["model"]} vs {ib["model"]}'
    ax.set_title(args.title or f'{la} vs {lb}: {model}, global batch {ia["global_batch_size"]}')
    fig.tight_layout()
    paths = pp.save(fig, args.out, args.dpi)

    pp.dump(args.dump_data, {
        'figure': 'compare', 'file_a': args.file_a, 'file_b': args.file_b,
        'strategy_a': ia['strategy'], 'strategy_b': ib['strategy'], 'model': model,
        'x': 'n_gpus', 'y': 'throughput_a / throughput_b', 'skipped': skipped,
        'systems': {k: {'n_gpus': v['n_gpus'], 'ratio': v['ratio']} for k, v in series.items()}})
    print('\n'.join(paths))
    return 0


def cli():
    pp.console_main('plot_compare', main)


if __name__ == '__main__':
    cli()
