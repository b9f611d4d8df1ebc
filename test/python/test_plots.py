#!/usr/bin/python3
"""CTest driver for the plot commands (scripts/plot_*.py): runs one command on a file written by
the C++ `sweep` (or `configs`), checks that the PNG and PDF exist and are images, and that the
values dumped with --dump-data equal the input's, read here independently with h5py (or csv).

  test_plots.py training_time FILE.h5 WORKDIR
  test_plots.py training_time_precision FILE.h5 WORKDIR   (a sweep over --precision bf16,fp8)
  test_plots.py throughput_per_gpu FILE.h5 WORKDIR
  test_plots.py breakdown FILE.h5 WORKDIR
  test_plots.py compare A.h5 B.h5 WORKDIR
  test_plots.py hw_sweep SWEEP_BINARY SWEEP_YAML WORKDIR
  test_plots.py configs FILE.csv WORKDIR
  test_plots.py cli FILE.h5 WORKDIR          (--help of every command, error messages)
"""
import csv
import json
import os
import subprocess
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, '..', '..', 'scripts')
PYTHON = sys.executable
COMMANDS = ['plot_training_time', 'plot_throughput_per_gpu', 'plot_breakdown', 'plot_hw_sweep', 'plot_compare',
            'plot_configs']
NOT_SYSTEMS = ('model', 'provenance', 'grid', 'points', 'base')
COMPONENTS = ['t_comp', 't_mem', 't_tp_comm', 't_dp_comm', 't_pp_comm', 't_bubble']
RTOL = 1e-12


class Failure(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def close(a, b, what):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    check(a.shape == b.shape, f'{what}: shape {a.shape} != {b.shape}')
    both_nan = np.isnan(a) & np.isnan(b)
    ok = both_nan | np.isclose(a, b, rtol=RTOL, atol=0.0)
    check(bool(ok.all()), f'{what}: plotted {a[~ok][:5]} != file {b[~ok][:5]}')


def as_float(values):
    """JSON lists (null for NaN) as a float array."""
    return np.array([[np.nan if v is None else v for v in row] if isinstance(row, list) else
                     (np.nan if row is None else row) for row in values], dtype=float)


def run(script, *args, expect=0):
    cmd = [PYTHON, os.path.join(SCRIPTS, script + '.py'), *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != expect:
        raise Failure(f'{" ".join(cmd)} exited {p.returncode} (expected {expect})\n'
                      f'stdout: {p.stdout}\nstderr: {p.stderr}')
    return p


def plot(script, workdir, name, *args):
    """Runs a plot command with --out and --dump-data; checks the figures; returns the dump."""
    os.makedirs(workdir, exist_ok=True)
    stem = os.path.join(workdir, name)
    for ext in ('.png', '.pdf', '.json'):
        if os.path.exists(stem + ext):
            os.remove(stem + ext)
    run(script, *args, '--out', stem, '--dump-data', stem + '.json')
    with open(stem + '.png', 'rb') as f:
        check(f.read(8) == b'\x89PNG\r\n\x1a\n', f'{stem}.png is not a PNG')
    with open(stem + '.pdf', 'rb') as f:
        check(f.read(5) == b'%PDF-', f'{stem}.pdf is not a PDF')
    check(os.path.getsize(stem + '.png') > 5000, f'{stem}.png is suspiciously small')
    with open(stem + '.json') as f:
        return json.load(f)


# Independent reading of the HDF5 files (h5py only; no perfsweep module).

def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def best_rows(group):
    """{n_gpus: row index} of the rank-0 rows of a system group's top/ table."""
    top = group['top']
    rank, n = top['rank'][()], top['n_gpus'][()]
    return {int(n[r]): r for r in np.flatnonzero(rank == 0)}


def best_throughput(group):
    rows = best_rows(group)
    tp = group['top']['throughput'][()]
    ns = sorted(rows)
    return np.array(ns, dtype=np.int64), np.array([tp[rows[n]] for n in ns])


def feasible_systems(f):
    out = {}
    for name in f:
        if name in NOT_SYSTEMS:
            continue
        n, tp = best_throughput(f[name])
        if len(n):
            out[name] = (n, tp)
    return out


# One check per command.

def test_training_time(h5, workdir):
    d = plot('plot_training_time', workdir, 'training_time', h5)
    with h5py.File(h5, 'r') as f:
        samples = float(f['model'].attrs['dataset_samples'])
        want = feasible_systems(f)
    check(d['dataset_samples'] == samples, f'dataset_samples {d["dataset_samples"]} != {samples}')
    check(set(d['systems']) == set(want), f'systems {sorted(d["systems"])} != {sorted(want)}')
    for name, (n, tp) in want.items():
        check(d['systems'][name]['n_gpus'] == n.tolist(), f'{name}: GPU counts differ')
        close(d['systems'][name]['days'], samples / tp / 86400.0, f'{name} days')
    first = next(iter(d['systems'].values()))
    for g in d['guides']:
        close(g['days'][0], first['days'][0] / g['factor'], 'guide start')
        close(g['days'][1], g['days'][0] * g['n_gpus'][0] / g['n_gpus'][1], 'guide slope (perfect scaling)')
    # an explicit dataset size overrides the file's
    d2 = plot('plot_training_time', workdir, 'training_time_override', h5, '--dataset-samples', 1e6)
    name = next(iter(want))
    close(d2['systems'][name]['days'], 1e6 / want[name][1] / 86400.0, f'{name} days with --dataset-samples')
    return f'{len(want)} systems'


def test_training_time_precision(h5, workdir):
    d = plot('plot_training_time', workdir, 'training_time_precision', h5, '--by', 'precision', '--dataset-samples', 1e8)
    want = {}
    with h5py.File(h5, 'r') as f:
        for name in f:
            if name in NOT_SYSTEMS:
                continue
            top = f[name]['top']
            n, tp, prec = top['n_gpus'][()], top['throughput'][()], top['precision'].asstr()[()]
            for label in ('bf16', 'fp8', 'mxfp8'):
                counts = sorted(set(n[prec == label].tolist()))
                if counts:
                    want[f'{name} {label}'] = (counts, [tp[(prec == label) & (n == g)].max() for g in counts])
    check(set(d['systems']) == set(want), f'series {sorted(d["systems"])} != {sorted(want)}')
    check(any(k.endswith(' bf16') for k in want) and any(k.endswith(' fp8') for k in want),
          f'the file holds both data types: {sorted(want)}')
    for name, (n, tp) in want.items():
        check(d['systems'][name]['n_gpus'] == n, f'{name}: GPU counts differ')
        close(d['systems'][name]['days'], 1e8 / np.asarray(tp) / 86400.0, f'{name} days')
    # FP8's linear layers are faster: its best is ahead of bf16's at every GPU count both have
    for name in want:
        if name.endswith(' fp8'):
            bf16 = want[name[:-4] + ' bf16']
            common = set(bf16[0]) & set(want[name][0])
            check(common and all(dict(zip(*want[name]))[g] > dict(zip(*bf16))[g] for g in common),
                  f'{name}: not faster than bf16 at every common GPU count')
    return f'{len(want)} series'


def test_throughput_per_gpu(h5, workdir):
    d = plot('plot_throughput_per_gpu', workdir, 'throughput_per_gpu', h5)
    with h5py.File(h5, 'r') as f:
        want = feasible_systems(f)
    ref = d['reference']
    check(ref['system'] in want, f'reference {ref["system"]} not a feasible system')
    rn, rtp = want[ref['system']]
    check(ref['n_gpus'] == int(rn[0]), 'the reference is not the smallest run of its system')
    base = rtp[0] / rn[0]
    check(set(d['systems']) == set(want), 'systems differ')
    for name, (n, tp) in want.items():
        check(d['systems'][name]['n_gpus'] == n.tolist(), f'{name}: GPU counts differ')
        close(d['systems'][name]['normalized_throughput_per_gpu'], (tp / n) / base, f'{name} normalized')
    check(d['systems'][ref['system']]['normalized_throughput_per_gpu'][0] == 1.0, 'reference point is not 1')
    return f'{len(want)} systems, reference {ref["system"]}'


def test_breakdown(h5, workdir):
    with h5py.File(h5, 'r') as f:
        strategy = text(f.attrs['strategy'])
        gbs = int(f.attrs['global_batch_size'])
        systems = feasible_systems(f)
        checked = []
        for system in sorted(systems)[:2]:
            g = f[system]
            rows = best_rows(g)
            ns = sorted(rows)
            idx = [rows[n] for n in ns]
            top = {k: g['top'][k][()][idx] for k in g['top'] if k != 'count'}
            for absolute in (False, True):
                args = [h5, '--system', system] + (['--absolute'] if absolute else [])
                d = plot('plot_breakdown', workdir, f'breakdown_{system}_{"abs" if absolute else "pct"}', *args)
                check(d['n_gpus'] == ns, f'{system}: GPU counts differ')
                check(d['stacked'] == ('seconds' if absolute else 'percent'), 'stacked mode')
                total = sum(top[k] for k in COMPONENTS)
                for k in COMPONENTS:
                    close(d['time'][k], top[k], f'{system} {k}')
                    close(d['percent'][k], 100.0 * top[k] / total, f'{system} {k} percent')
                close(d['t'], top['t'], f'{system} t')
                close(d['mem'], top['mem'], f'{system} mem')
                keys = (['tp'] if strategy == '1d' else ['tp1', 'tp2']) + ['pp', 'dp', 'mbs']
                keys += [k for k in top if k.startswith('nv_')]
                for k in keys:
                    check(d['config'][k] == top[k].tolist(), f'{system} {k}: {d["config"][k]} != {top[k].tolist()}')
                check(d['config']['micro_batches'] == ((gbs // top['dp']) // top['mbs']).tolist(), 'micro-batches')
                if 'hbm_capacity' in g.attrs:
                    check(d['hbm_capacity'] == float(g.attrs['hbm_capacity']), 'hbm_capacity')
            checked.append(system)
    run('plot_breakdown', h5, '--system', 'NO-SUCH-SYSTEM', '--out', os.path.join(workdir, 'x'), expect=2)
    return f'{strategy}: {", ".join(checked)}'


def test_compare(a, b, workdir):
    d = plot('plot_compare', workdir, 'compare', a, b)
    with h5py.File(a, 'r') as fa, h5py.File(b, 'r') as fb:
        sa, sb = feasible_systems(fa), feasible_systems(fb)
        check(d['strategy_a'] == text(fa.attrs['strategy']) and d['strategy_b'] == text(fb.attrs['strategy']),
              'strategies')
    n_cmp = 0
    for name in set(sa) & set(sb):
        ta = dict(zip(sa[name][0].tolist(), sa[name][1]))
        tb = dict(zip(sb[name][0].tolist(), sb[name][1]))
        common = sorted(set(ta) & set(tb))
        if not common:
            check(name not in d['systems'], f'{name} plotted without common GPU counts')
            continue
        check(d['systems'][name]['n_gpus'] == common, f'{name}: GPU counts {d["systems"][name]["n_gpus"]} != {common}')
        close(d['systems'][name]['ratio'], [ta[n] / tb[n] for n in common], f'{name} ratio')
        n_cmp += len(common)
    check(n_cmp > 0, 'nothing compared')
    return f'{len(d["systems"])} systems, {n_cmp} ratios'


def grid_file(binary, sweep_yaml, workdir):
    """A small hardware-sweep file written by the C++ sweep."""
    path = os.path.join(workdir, 'hw_sweep.h5')
    if os.path.exists(path):
        os.remove(path)
    cmd = [binary, '--model', 'gpt3_1T', '--strat', '1d', '--sweep', sweep_yaml, '--n-gpus', '1024:4096', '-q',
           '-o', path]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise Failure(f'{" ".join(cmd)} exited {p.returncode}\n{p.stdout}\n{p.stderr}')
    return path, 'C++ sweep --sweep'


def test_hw_sweep(binary, sweep_yaml, workdir):
    os.makedirs(workdir, exist_ok=True)
    path, source = grid_file(binary, sweep_yaml, workdir)
    with h5py.File(path, 'r') as f:
        g = f['grid']
        n_gpus = g['n_gpus'][()].tolist()
        best = g['best_throughput'][()]
        params = {k: (int(g[k].attrs['axis']), g[k][()]) for k in g if 'axis' in g[k].attrs}
        has_base = 'base' in f
        base = best_throughput(f['base']) if has_base else None
    # the largest GPU count at which the base system fits
    k = max(i for i, n in enumerate(n_gpus) if np.isfinite(best[:, :, i]).any() and
            (not has_base or n in base[0].tolist()))
    n = n_gpus[k]
    d = plot('plot_hw_sweep', workdir, 'hw_throughput', path, '--n-gpus', n)
    check(d['n_gpus'] == n and d['metric'] == 'best_throughput', 'metric / GPU count')
    close(as_float(d['values']), best[:, :, k], 'best throughput')
    for key, axis in (('x_axis', 0), ('y_axis', 1)):
        for p in d[key]['parameters']:
            check(params[p['name']][0] == axis, f'{p["name"]} on the wrong axis')
            close(p['values'], params[p['name']][1], f'{p["name"]} values')
    check(sorted(p['name'] for key in ('x_axis', 'y_axis') for p in d[key]['parameters']) == sorted(params),
          'not every swept parameter labelled')
    if has_base:
        d = plot('plot_hw_sweep', workdir, 'hw_speedup', path, '--n-gpus', n, '--speedup')
        ref = base[1][base[0].tolist().index(n)]
        close(d['base']['throughput'], ref, 'base throughput')
        close(as_float(d['values']), best[:, :, k] / ref, 'speed-up')
        # without /base: the speed-up is over the grid point nearest the base system's values
        nobase = os.path.join(workdir, 'hw_sweep_no_base.h5')
        with h5py.File(path, 'r') as src, h5py.File(nobase, 'w') as dst:
            for key, v in src.attrs.items():
                dst.attrs[key] = v
            for key in src:
                if key != 'base':
                    src.copy(key, dst)
            base_values = {p: float(src['base'].attrs[p]) for p in params}
        args = [f'{p}={v}' for p, v in base_values.items()]
        d = plot('plot_hw_sweep', workdir, 'hw_speedup_no_base', nobase, '--n-gpus', n, '--speedup',
                 '--base-values', *args)
        dist = np.zeros(best.shape[:2])
        for p, (axis, vals) in params.items():
            rel = (vals - base_values[p]) / (np.ptp(vals) or 1.0)
            dist += (rel[:, None] if axis == 0 else rel[None, :]) ** 2
        i0, i1 = np.unravel_index(np.argmin(dist), dist.shape)
        check(d['base']['source'] == 'nearest grid point' and (d['base']['i0'], d['base']['i1']) == (i0, i1),
              f'nearest point {d["base"]} != {(i0, i1)}')
        close(as_float(d['values']), best[:, :, k] / best[i0, i1, k], 'speed-up over the nearest point')
    run('plot_hw_sweep', path, '--n-gpus', 3, '--out', os.path.join(workdir, 'x'), expect=2)
    print(f'plot_hw_sweep: grid from {source}')
    return f'{source}; {best.shape[0]}x{best.shape[1]} points at {n} GPUs'


def test_configs(csv_path, workdir):
    with open(csv_path, newline='') as f:
        rows = list(csv.DictReader(f))
    d = plot('plot_configs', workdir, 'configs', csv_path, '--limit', 0)
    check(d['rows'] == list(range(len(rows))), 'rows plotted')
    for k in COMPONENTS:
        close(d['time'][k], [float(r[k]) for r in rows], k)
    for k in ('wts_mem', 'wts_grad_mem', 'wts_optimizer_states_mem', 'acts_mem'):
        close(d['memory'][k], [float(r[k]) for r in rows], k)
    close(d['mem_limit'], [float(r['mem_limit']) for r in rows], 'mem_limit')
    check(d['fits'] == [r['fits'].strip().lower() in ('1', 'true') for r in rows], 'fits')
    # the fastest configuration made not to fit: --limit keeps the fastest fitting ones
    fastest = max(range(len(rows)), key=lambda i: float(rows[i]['throughput']))
    rows[fastest]['fits'] = '0'
    rows[fastest]['acts_mem'] = str(float(rows[fastest]['acts_mem']) + 2 * float(rows[fastest]['mem_limit']))
    csv_path = os.path.join(workdir, 'configs_not_fitting.csv')
    with open(csv_path, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    d = plot('plot_configs', workdir, 'configs_pct', csv_path, '--percent', '--sort', 'throughput', '--limit', 3)
    fits = [r['fits'].strip().lower() in ('1', 'true') for r in rows]
    order = sorted(range(len(rows)), key=lambda i: (not fits[i], -float(rows[i]['throughput']), i))
    check(d['rows'] == order[:3], f'fastest 3: {d["rows"]} != {order[:3]}')
    total = [sum(float(rows[i][k]) for k in COMPONENTS) for i in d['rows']]
    for k in COMPONENTS:
        close(d['time'][k], [100.0 * float(rows[i][k]) / t for i, t in zip(d['rows'], total)], f'{k} percent')
    return f'{len(rows)} configurations'


def test_cli(h5, workdir):
    for c in COMMANDS:
        p = run(c, '--help')
        for opt in ('--out', '--dump-data'):
            check(opt in p.stdout, f'{c} --help does not mention {opt}')
    # no dataset size: a clear error, no traceback
    os.makedirs(workdir, exist_ok=True)
    bare = os.path.join(workdir, 'no_dataset_samples.h5')
    with h5py.File(h5, 'r') as src, h5py.File(bare, 'w') as dst:
        for k, v in src.attrs.items():
            dst.attrs[k] = v
        for k in src:
            src.copy(k, dst)
        if 'dataset_samples' in dst['model'].attrs:
            del dst['model'].attrs['dataset_samples']
    p = run('plot_training_time', bare, '--out', os.path.join(workdir, 'x'), expect=2)
    check('dataset_samples' in p.stderr and '--dataset-samples' in p.stderr and 'Traceback' not in p.stderr,
          f'unclear error: {p.stderr}')
    p = run('plot_compare', h5, os.path.join(workdir, 'missing.h5'), '--out', os.path.join(workdir, 'x'), expect=2)
    check('Traceback' not in p.stderr, p.stderr)
    return 'help and errors'


TESTS = {'training_time': test_training_time, 'training_time_precision': test_training_time_precision,
         'throughput_per_gpu': test_throughput_per_gpu, 'breakdown': test_breakdown, 'compare': test_compare, 'hw_sweep': test_hw_sweep,
         'configs': test_configs, 'cli': test_cli}


def main(argv):
    if len(argv) < 2 or argv[0] not in TESTS:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        msg = TESTS[argv[0]](*argv[1:])
    except Failure as e:
        print(f'FAIL {argv[0]}: {e}', file=sys.stderr)
        return 1
    print(f'ok {argv[0]}: {msg}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
