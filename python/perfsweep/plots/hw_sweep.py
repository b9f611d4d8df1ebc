"""A hardware design-space sweep (`sweep --sweep sweeps/bw_capacity.yaml`) as a heatmap at one
GPU count: the best throughput at every grid point, or with --speedup that throughput divided by
the unswept base system's (the /base group) at the same GPU count, or with --days the training
time dataset_samples / throughput / 86400 (the paper's bandwidth-capacity and FLOP/s-capacity
figures). Axis 0 of the grid runs along x, axis 1 along y; each axis is labelled with its swept
parameters (zipped parameters, which move together, share the axis) and their units, with ticks
at the /grid values. Grey cells: no configuration fits.

  /usr/bin/python3 scripts/plot_hw_sweep.py outputs/sweep_bw_capacity_1d_gpt3_1T.h5 --n-gpus 4096 --speedup

Without a /base group, --speedup divides by the grid point nearest the base system's values
(from --base-values NAME=VALUE..., else systems/<base_system>.yaml of this checkout).
"""
import os
import re

import numpy as np
from matplotlib import colors as mcolors
from matplotlib.patches import Patch

from .. import h5 as ps
from .. import plotting as pp

PRETTY = {'hbm_capacity': 'HBM capacity', 'hbm_bandwidth': 'HBM bandwidth',
          'matrix_flops_fp16': 'tensor-core FP16', 'vector_flops_fp16': 'vector FP16',
          'vector_flops_fp32': 'vector FP32', 'nvlink_bandwidth': 'NVLink bandwidth',
          'ib_bandwidth': 'InfiniBand bandwidth', 'nvlink_latency': 'NVLink latency',
          'ib_latency': 'InfiniBand latency', 'nic_factor': 'NICs per GPU'}
# The checkout this module lies in (python/perfsweep/plots/), else the working directory (an
# installed package): where systems/<name>.yaml is looked up.
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
REPO = _CHECKOUT if os.path.isdir(os.path.join(_CHECKOUT, 'systems')) else os.getcwd()


def axis_label(params):
    return '\n'.join(f'{PRETTY.get(n, n)} ({u})' if u else PRETTY.get(n, n) for n, u, _ in params)


def tick_positions(n, max_ticks=9):
    step = max(1, int(np.ceil(n / max_ticks)))
    return list(range(0, n, step))


def tick_labels(params, idx):
    return ['\n'.join(fmt_value(p[2][i]) for p in params) for i in idx]


def fmt_value(v):
    """Tick text of a swept value: whole numbers from 100 up, else 4 significant digits."""
    return f'{v:.0f}' if abs(v) >= 100 else f'{v:.4g}'


def nice_log_ticks(lo, hi):
    """1-2-5 ticks between lo and hi (for a log colour scale)."""
    ticks = []
    for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1):
        ticks += [m * 10.0 ** e for m in (1, 2, 5) if lo <= m * 10.0 ** e <= hi]
    return ticks


def base_values_from_yaml(base_system):
    """Numeric top-level `key: value` lines of systems/<base_system>.yaml in the checkout (REPO)."""
    path = os.path.join(REPO, 'systems', f'{base_system}.yaml')
    if not base_system or not os.path.exists(path):
        return {}
    values = {}
    for line in open(path):
        m = re.match(r'^([A-Za-z_0-9]+)\s*:\s*([-+0-9.eE]+)\s*(#.*)?$', line)
        if m:
            try:
                values[m.group(1)] = float(m.group(2))
            except ValueError:
                pass
    return values


def nearest_point(grid, base_values):
    """(i0, i1) of the grid point closest to base_values, distances relative to each axis's span."""
    best, best_d = None, np.inf
    a0, a1 = grid['axes']
    n1 = len(a1[0][2]) if a1 else 1
    for i0 in range(len(a0[0][2])):
        for i1 in range(n1):
            d = 0.0
            for params, i in ((a0, i0), (a1, i1)):
                for name, _, vals in params:
                    if name in base_values:
                        span = float(np.ptp(vals)) or 1.0
                        d += ((vals[i] - base_values[name]) / span) ** 2
            if d < best_d:
                best, best_d = (i0, i1), d
    return best


def fractional_index(vals, v):
    """Position of value v along an axis of (monotonic) values, in cell units."""
    vals = np.asarray(vals, dtype=float)
    if len(vals) == 1:
        return 0.0
    order = np.argsort(vals)
    return float(np.interp(v, vals[order], np.arange(len(vals))[order]))


def compute(path, n_gpus, metric, samples, base_override):
    grid = ps.grid(path)
    counts = [int(n) for n in grid['n_gpus']]
    if n_gpus is None:
        feasible = [n for k, n in enumerate(counts) if np.isfinite(grid['best_throughput'][:, :, k]).any()]
        if not feasible:
            raise pp.PlotError(f'{path}: no grid point has a feasible configuration at any GPU count')
        n_gpus = feasible[-1]
    if n_gpus not in counts:
        raise pp.PlotError(f'{path}: {n_gpus} GPUs not in the sweep; GPU counts: {", ".join(map(str, counts))}')
    k = counts.index(n_gpus)
    tp = grid['best_throughput'][:, :, k]
    out = {'grid': grid, 'n_gpus': n_gpus, 'throughput': tp, 'base': None}
    base_values = dict(grid['base_values'])
    base_values.update(base_override)
    if not base_values:
        base_values = base_values_from_yaml(grid['base_system'])
    out['base_values'] = base_values
    if metric == 'speedup':
        if grid['has_base'] and not base_override:
            n, t = ps.best(path, 'base')
            hit = [float(x) for m, x in zip(n, t) if int(m) == n_gpus]
            if not hit:
                raise pp.PlotError(f'{path}: the base system {grid["base_system"]} has no feasible configuration '
                                   f'at {n_gpus} GPUs; no speed-up to show')
            out['base'] = {'source': 'base group', 'system': grid['base_system'], 'throughput': hit[0]}
        else:
            if not base_values:
                raise pp.PlotError(f'{path}: no /base group and no base values for {grid["base_system"]!r}; '
                                   'give them with --base-values NAME=VALUE ...')
            i0, i1 = nearest_point(grid, base_values)
            ref = float(tp[i0, i1])
            if not np.isfinite(ref):
                raise pp.PlotError(f'{path}: the grid point nearest the base values ({i0}, {i1}) has no feasible '
                                   f'configuration at {n_gpus} GPUs')
            out['base'] = {'source': 'nearest grid point', 'system': grid['base_system'], 'i0': i0, 'i1': i1,
                           'throughput': ref}
        out['values'] = tp / out['base']['throughput']
    elif metric == 'days':
        out['values'] = samples / tp / pp.SECONDS_PER_DAY
    else:
        out['values'] = tp
    return out


def parse_pairs(items, what):
    values = {}
    for item in items or []:
        name, sep, v = item.partition('=')
        try:
            values[name] = float(v)
        except ValueError:
            sep = ''
        if not sep:
            raise pp.PlotError(f'{what} takes NAME=VALUE, got {item!r}')
    return values


def parse_marks(items):
    marks = []
    for item in items or []:
        label, sep, rest = item.partition(':')
        try:
            v0, v1 = (float(x) for x in rest.split(','))
        except ValueError:
            sep = ''
        if not sep:
            raise pp.PlotError(f'--mark takes LABEL:V0,V1 (values of the two axes\' first parameters), got {item!r}')
        marks.append((label, v0, v1))
    return marks


def main(argv):
    ap = pp.parser(__doc__, 'hw_sweep')
    ap.add_argument('file', help='HDF5 output of `sweep --sweep ...` (with /grid)')
    ap.add_argument('--n-gpus', type=int, help='GPU count to show (default: the largest where anything fits)')
    what = ap.add_mutually_exclusive_group()
    what.add_argument('--speedup', action='store_true', help='speed-up over the base system at the same GPU count')
    what.add_argument('--days', action='store_true', help='training time in days (needs dataset_samples)')
    ap.add_argument('--dataset-samples', type=float, metavar='N', help='samples per training run for --days')
    ap.add_argument('--base-values', nargs='+', metavar='NAME=VALUE',
                    help='base system parameter values (for --speedup without /base, and the base marker)')
    ap.add_argument('--mark', action='append', metavar='LABEL:V0,V1',
                    help='mark a system at axis-0 value V0 and axis-1 value V1 (repeatable), e.g. A100:80,312')
    ap.add_argument('--annotate', choices=['auto', 'yes', 'no'], default='auto',
                    help='write the value in each cell (auto: grids of at most 120 points)')
    args = ap.parse_args(argv)

    metric = 'speedup' if args.speedup else 'days' if args.days else 'best_throughput'
    samples = pp.dataset_samples(args.file, args.dataset_samples) if args.days else None
    d = compute(args.file, args.n_gpus, metric, samples, parse_pairs(args.base_values, '--base-values'))
    grid, z = d['grid'], d['values']
    a0, a1 = grid['axes']
    n0, n1 = z.shape
    info = ps.run_info(args.file)

    fig, ax = pp.plt.subplots(figsize=(8.0, 5.8))
    masked = np.ma.masked_invalid(z.T)  # rows: axis 1 (y), columns: axis 0 (x)
    finite = z[np.isfinite(z)]
    if metric == 'speedup':
        cmap = pp.plt.get_cmap('RdBu').copy()
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.5, 2.0)
        norm = mcolors.TwoSlopeNorm(vcenter=1.0, vmin=min(lo, 0.999), vmax=max(hi, 1.001))
        label = f'Speed-up over {grid["base_system"] or "base"} at {d["n_gpus"]} GPUs'
    elif metric == 'days':
        cmap = pp.plt.get_cmap('viridis_r').copy()
        norm = mcolors.LogNorm() if finite.size and finite.max() > 10 * finite.min() else None
        label = f'Training time (days), {pp.fmt_count(samples)} samples'
    else:
        cmap = pp.plt.get_cmap('viridis').copy()
        norm = None
        label = 'Best throughput (samples/s)'
    cmap.set_bad('0.82')
    mesh = ax.pcolormesh(np.arange(n0 + 1) - 0.5, np.arange(n1 + 1) - 0.5, masked, cmap=cmap, norm=norm,
                         shading='flat')
    cbar = fig.colorbar(mesh, ax=ax)
    cbar.set_label(label)
    if metric == 'speedup':  # ticks on both sides of 1, however short the side above 1 is
        below = np.linspace(norm.vmin, 1.0, 5)
        above = np.linspace(1.0, norm.vmax, 4)[1:]
        cbar.set_ticks(np.concatenate([below, above]))
        cbar.ax.yaxis.set_major_formatter(pp.matplotlib.ticker.FuncFormatter(lambda v, _: f'{v:.3g}'))
    if isinstance(norm, mcolors.LogNorm):
        cbar.set_ticks(nice_log_ticks(float(finite.min()), float(finite.max())))
        cbar.ax.yaxis.set_major_formatter(pp.matplotlib.ticker.FuncFormatter(lambda v, _: f'{v:g}'))
        cbar.ax.yaxis.set_minor_formatter(pp.matplotlib.ticker.NullFormatter())
    annotate = args.annotate == 'yes' or (args.annotate == 'auto' and n0 * n1 <= 120)
    if annotate:
        for i0 in range(n0):
            for i1 in range(n1):
                v = z[i0, i1]
                if np.isfinite(v):
                    rgba = cmap(mesh.norm(v))
                    dark = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] < 0.5
                    ax.text(i0, i1, f'{v:.3g}', ha='center', va='center', fontsize=7,
                            color='white' if dark else 'black')
    xt = tick_positions(n0)
    ax.set_xticks(xt)
    ax.set_xticklabels(tick_labels(a0, xt), fontsize=8)
    ax.set_xlabel(axis_label(a0))
    if a1:
        yt = tick_positions(n1, 12)
        ax.set_yticks(yt)
        ax.set_yticklabels(tick_labels(a1, yt), fontsize=8)
        ax.set_ylabel(axis_label(a1))
    else:
        ax.set_yticks([])

    marks = parse_marks(args.mark)
    bv = d['base_values']
    if bv and a0[0][0] in bv and (not a1 or a1[0][0] in bv):
        marks.insert(0, (grid['base_system'] or 'base', bv[a0[0][0]], bv[a1[0][0]] if a1 else 0.0))
    plotted_marks = []
    for lbl, v0, v1 in marks:
        x = fractional_index(a0[0][2], v0)
        y = fractional_index(a1[0][2], v1) if a1 else 0.0
        if annotate:  # a ring around the cell's value
            ax.plot([x], [y], marker='o', markersize=24, markerfacecolor='none', markeredgecolor='red',
                    markeredgewidth=2, zorder=5)
        else:
            ax.plot([x], [y], marker='*', markersize=13, color='red', markeredgecolor='black', zorder=5)
        ax.annotate(lbl, (x, y), xytext=(10, 10), textcoords='offset points', fontsize=9, color='black',
                    bbox={'boxstyle': 'round,pad=0.2', 'facecolor': 'white', 'alpha': 0.8, 'edgecolor': 'none'})
        plotted_marks.append({'label': lbl, 'axis0_value': v0, 'axis1_value': v1, 'x': x, 'y': y})
    if not np.isfinite(z).all():
        ax.legend(handles=[Patch(facecolor='0.82', label='nothing fits')], loc='upper left',
                  bbox_to_anchor=(0.0, -0.16 if a1 and len(a0) > 1 else -0.12), fontsize=8, frameon=False)
    ax.set_title(args.title or f'{pp.run_label(args.file)}, {d["n_gpus"]} GPUs')
    fig.tight_layout()
    paths = pp.save(fig, args.out, args.dpi)

    def axis_dump(params):
        return {'parameters': [{'name': n, 'units': u, 'values': v} for n, u, v in params]}

    pp.dump(args.dump_data, {
        'figure': 'hw_sweep', 'file': args.file, 'model': info['model'], 'strategy': info['strategy'],
        'n_gpus': d['n_gpus'], 'metric': metric, 'dataset_samples': samples,
        'x_axis': axis_dump(a0), 'y_axis': axis_dump(a1),
        'values': z, 'values_layout': '[axis 0 index][axis 1 index]', 'best_throughput': d['throughput'],
        'base': d['base'], 'marks': plotted_marks})
    print('\n'.join(paths))
    return 0


def cli():
    pp.console_main('plot_hw_sweep', main)


if __name__ == '__main__':
    cli()
