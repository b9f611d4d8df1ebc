"""Best throughput per GPU against GPU count for every system of a sweep run, normalized to the
first system's smallest feasible run (log-log): how far each system is from perfect scaling,
which makes the NVLink domain size's effect visible (the paper's per-GPU throughput figure).

  normalized(n) = (best_throughput(n) / n) / (best_throughput_ref(n0) / n0)

The reference is the first system in plotting order (GPU generation, then NVLink domain size)
or --reference; n0 its smallest feasible GPU count.

  /usr/bin/python3 scripts/plot_throughput_per_gpu.py outputs/exec_1d_gpt3_1T.h5 --out perf_1d
"""
from .. import h5 as ps
from .. import plotting as pp


def compute(path, systems=None, reference=None):
    series = {}
    for name in pp.ordered_systems(path, systems):
        n, tp = ps.best(path, name)
        if len(n):
            series[name] = {'n_gpus': n, 'throughput_per_gpu': tp / n}
    if not series:
        raise pp.PlotError(f'{path}: no system has a feasible configuration')
    ref_name = reference or next(iter(series))
    if ref_name not in series:
        if ref_name in ps.systems(path):
            raise pp.PlotError(f'{path}: reference system {ref_name} has no feasible configuration')
        raise pp.PlotError(f'{path}: no system group {ref_name}; have {", ".join(ps.systems(path))}')
    ref = {'system': ref_name, 'n_gpus': int(series[ref_name]['n_gpus'][0]),
           'throughput_per_gpu': float(series[ref_name]['throughput_per_gpu'][0])}
    for s in series.values():
        s['normalized'] = s['throughput_per_gpu'] / ref['throughput_per_gpu']
    return series, ref


def main(argv):
    ap = pp.parser(__doc__, 'throughput_per_gpu')
    ap.add_argument('file', help='HDF5 output of `sweep` (schema perfsweep/1)')
    ap.add_argument('--systems', nargs='+', metavar='NAME', help='system groups to plot, in this order')
    ap.add_argument('--reference', metavar='NAME', help='system to normalize to (default: the first plotted)')
    args = ap.parse_args(argv)

    series, ref = compute(args.file, args.systems, args.reference)
    info = ps.run_info(args.file)

    fig, ax = pp.plt.subplots(figsize=(8.5, 5.0))
    styles = pp.system_styles(list(series))
    for name, s in series.items():
        st = styles[name]
        ax.plot(s['n_gpus'], s['normalized'], label=name, color=st['color'], marker=st['marker'],
                linestyle=st['linestyle'], markersize=5, linewidth=1.6)
    ax.set_yscale('log', base=2)
    pp.log2_gpu_axis(ax, [n for s in series.values() for n in s['n_gpus']])
    ax.set_ylabel(f'Throughput per GPU / {ref["system"]} at {ref["n_gpus"]} GPUs')
    ax.yaxis.set_major_formatter(pp.matplotlib.ticker.FuncFormatter(lambda v, _: f'{v:g}'))
    pp.style_axes(ax)
    pp.legend_outside(ax)
    ax.set_title(args.title or f'Normalized throughput per GPU: {pp.run_label(args.file)}')
    fig.tight_layout()
    paths = pp.save(fig, args.out, args.dpi)

    pp.dump(args.dump_data, {
        'figure': 'throughput_per_gpu', 'file': args.file, 'model': info['model'], 'strategy': info['strategy'],
        'x': 'n_gpus', 'y': 'normalized_throughput_per_gpu', 'reference': ref,
        'systems': {k: {'n_gpus': v['n_gpus'], 'normalized_throughput_per_gpu': v['normalized']}
                    for k, v in series.items()}})
    print('\n'.join(paths))
    return 0


def cli():
    pp.console_main('plot_throughput_per_gpu', main)


if __name__ == '__main__':
    cli()
