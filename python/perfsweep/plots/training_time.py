"""Training time in days against GPU count for every system of a sweep run (log-log), with
perfect-scaling guides: the paper's overall-performance figure.

  days(n) = dataset_samples / best_throughput(n) / 86400

dataset_samples (samples per training run) comes from the /model attribute of the file, or
--dataset-samples. The guides start at the first system's smallest feasible run and fall as
1/n, shifted down by each --guides factor (1 = that system scaling perfectly).

  /usr/bin/python3 scripts/plot_training_time.py outputs/exec_1d_gpt3_1T.h5 --out time_1d

--by precision (a sweep over --precision bf16,fp8): one line per system and data type, each the
fastest of the top/ rows of that type at each GPU count; a GPU count whose top/ rows (sweep
--top-n) hold no row of a type has no point for it.
"""

import numpy as np

from .. import h5 as ps
from .. import plotting as pp




def best_by_precision(path, system):
    """{data type: (n_gpus, best throughput)} of one system group's top/ rows."""
    with ps.open_run(path) as f:
        top = f[system]['top']
        if 'precision' not in top:
            raise pp.PlotError(f'{path}: {system}/top has no precision column (a sweep before precisions)')
        n = np.asarray(top['n_gpus'][()], dtype=np.int64)
        tp = np.asarray(top['throughput'][()], dtype=float)
        prec = ps.option_names(top['precision'])  # names; an older file's codes by its `codes` attribute
        order = ps.option_order(top['precision'])
    out = {}
    for name in sorted(set(prec.tolist()), key=lambda v: (order.index(v) if v in order else len(order), v)):
        counts, best = [], []
        for g in sorted(set(n[prec == name].tolist())):
            counts.append(g)
            best.append(float(tp[(prec == name) & (n == g)].max()))
        out[name] = (np.asarray(counts, dtype=np.int64), np.asarray(best))
    return out


def compute(path, samples, systems=None, guides=(1.0, 4.0, 12.0), by=None):
    series = {}
    for name in pp.ordered_systems(path, systems):
        if by == 'precision':
            for prec, (n, tp) in best_by_precision(path, name).items():
                series[f'{name} {prec}'] = {'n_gpus': n, 'best_throughput': tp,
                                            'days': samples / tp / pp.SECONDS_PER_DAY}
            continue
        n, tp = ps.best(path, name)
        if len(n):
            series[name] = {'n_gpus': n, 'best_throughput': tp, 'days': samples / tp / pp.SECONDS_PER_DAY}
    if not series:
        raise pp.PlotError(f'{path}: no system has a feasible configuration')
    ref_name = next(iter(series))
    ref = series[ref_name]
    n_all = sorted(set(int(x) for s in series.values() for x in s['n_gpus']))
    x0, x1 = int(ref['n_gpus'][0]), n_all[-1]
    guide_lines = []
    for g in guides:
        y0 = float(ref['days'][0]) / g
        guide_lines.append({'factor': g, 'label': f'{g:g}x {ref_name} perfect scaling' if g != 1 else
                            f'{ref_name} perfect scaling', 'n_gpus': [x0, x1], 'days': [y0, y0 * x0 / x1]})
    return series, ref_name, guide_lines


def main(argv):
    ap = pp.parser(__doc__, 'training_time')
    ap.add_argument('file', help='HDF5 output of `sweep` (schema perfsweep/1)')
    ap.add_argument('--dataset-samples', type=float, metavar='N',
                    help='samples per training run (default: the /model attribute dataset_samples)')
    ap.add_argument('--systems', nargs='+', metavar='NAME', help='system groups to plot, in this order')
    ap.add_argument('--by', choices=['precision'],
                    help='one line per system and data type (a sweep over --precision bf16,fp8)')
    ap.add_argument('--guides', type=float, nargs='*', default=[1.0, 4.0, 12.0], metavar='F',
                    help='perfect-scaling guides at 1/F of the first system\'s smallest run (default: 1 4 12)')
    args = ap.parse_args(argv)

    samples = pp.dataset_samples(args.file, args.dataset_samples)
    series, ref_name, guides = compute(args.file, samples, args.systems, args.guides, args.by)
    info = ps.run_info(args.file)

    fig, ax = pp.plt.subplots(figsize=(8.5, 5.0))
    styles = pp.system_styles(list(series))
    for name, s in series.items():
        st = styles[name]
        ax.plot(s['n_gpus'], s['days'], label=name, color=st['color'], marker=st['marker'],
                linestyle=st['linestyle'], markersize=5, linewidth=1.6)
    # Guides are labelled by their factor just right of where they end, beyond the data; the
    # legend says what they are.
    factors = ', '.join(f"{g['factor']:g}x" for g in guides)
    for i, g in enumerate(guides):
        ax.plot(g['n_gpus'], g['days'], color='0.35', linestyle=(0, (4, 3)), linewidth=1.0, zorder=1,
                label=f'{ref_name} scaling\nperfectly, {factors}' if i == 0 else None)
        ax.annotate(f'{g["factor"]:g}x', xy=(g['n_gpus'][1], g['days'][1]), xytext=(5, 0), textcoords='offset points',
                    ha='left', va='center', fontsize=7.5, color='0.25', annotation_clip=False)
    ax.set_yscale('log')
    pp.log2_gpu_axis(ax, [n for s in series.values() for n in s['n_gpus']])
    ax.set_ylabel('Training time (days)')
    pp.style_axes(ax)
    ax.grid(True, which='minor', axis='y', linestyle=':', linewidth=0.4, alpha=0.5)
    lo, hi = ax.get_xlim()
    ax.set_xlim(lo, hi * 1.25)  # room for the guide labels
    pp.legend_outside(ax)
    ax.set_title(args.title or f'Training time, {pp.fmt_count(samples)} samples: {pp.run_label(args.file)}')
    fig.tight_layout()
    paths = pp.save(fig, args.out, args.dpi)

    pp.dump(args.dump_data, {
        'figure': 'training_time', 'file': args.file, 'model': info['model'], 'strategy': info['strategy'],
        'dataset_samples': samples, 'x': 'n_gpus', 'y': 'days',
        'systems': {k: {'n_gpus': v['n_gpus'], 'days': v['days']} for k, v in series.items()},
        'guides': guides})
    print('\n'.join(paths))
    return 0


def cli():
    pp.console_main('plot_training_time', main)


if __name__ == '__main__':
    cli()
