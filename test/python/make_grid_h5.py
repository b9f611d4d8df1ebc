#!/usr/bin/python3
"""Writes a small synthetic hardware-sweep file in the layout of lib/io/grid_h5.hpp (schema
perfsweep/1: /grid, /points/<i>, /base), for testing plot_hw_sweep.py when the C++ `sweep`
cannot run --sweep. The throughputs are made up (a smooth function of the swept values, NaN where
"nothing fits"); only the layout matters.

  make_grid_h5.py OUT.h5 [--zipped] [--no-base]
"""
import argparse

import h5py
import numpy as np

N_GPUS = np.array([1024, 2048, 4096], dtype=np.int64)
BASE = {'hbm_capacity': 192.0, 'hbm_bandwidth': 8000.0, 'matrix_flops_fp16': 2500.0, 'vector_flops_fp16': 339.0}


def axes(zipped):
    if zipped:
        # axis 0: bandwidth and capacity moving together; axis 1: tensor-core and vector FLOP/s
        return [[('hbm_bandwidth', 'GB/s', [1555.0, 4800.0, 8000.0, 16000.0]),
                 ('hbm_capacity', 'GB', [80.0, 141.0, 192.0, 384.0])],
                [('matrix_flops_fp16', 'TFLOP/s', [312.0, 989.4, 2500.0]),
                 ('vector_flops_fp16', 'TFLOP/s', [78.0, 133.8, 339.0])]]
    return [[('hbm_capacity', 'GB', [80.0, 192.0, 540.0, 1000.0])],
            [('hbm_bandwidth', 'GB/s', [500.0, 8000.0, 16000.0])]]


def throughput(values, n):
    cap, bw = values.get('hbm_capacity', 192.0), values.get('hbm_bandwidth', 8000.0)
    flops = values.get('matrix_flops_fp16', 2500.0)
    if cap * n < 80.0 * 1024:  # too little memory in total: nothing fits
        return np.nan
    return 0.01 * n * flops ** 0.8 * (bw / (bw + 3000.0)) * (1.0 + 0.05 * np.log(cap / 80.0))


def write_system_group(g, values, n_gpus):
    for k, v in BASE.items():
        g.attrs[k] = values.get(k, v)
    g.attrs['nvs'] = 8
    g.attrs['name'] = 'B200'
    best = np.array([throughput(values, n) for n in n_gpus])
    ok = np.isfinite(best)
    start = int(np.argmax(ok)) if ok.any() else len(n_gpus)
    g['n_gpus'] = n_gpus[start:]
    g['t_max'] = best[ok]
    g['t_min'] = best[ok] * 0.9
    top = g.create_group('top')
    counts = [2 if np.isfinite(b) else 0 for b in best[start:]]
    rows_n = [n for n, c in zip(n_gpus[start:], counts) for _ in range(c)]
    rows_t = [t for t, c in zip(best[start:], counts) for t in (t, t * 0.9)[:c]]
    top['count'] = np.array(counts, dtype=np.int64)
    top['n_gpus'] = np.array(rows_n, dtype=np.int64)
    top['rank'] = np.array([r for c in counts for r in range(c)], dtype=np.int64)
    top['throughput'] = np.array(rows_t, dtype=float)
    top['mem'] = np.full(len(rows_n), 100.0)


def make(path, zipped=False, base=True):
    ax = axes(zipped)
    n0, n1 = len(ax[0][0][2]), len(ax[1][0][2])
    with h5py.File(path, 'w') as f:
        f.attrs['schema'] = 'perfsweep/1'
        f.attrs['strategy'] = '1d'
        f.attrs['model'] = 'gpt3_1T'
        f.attrs['global_batch_size'] = 4096
        f.attrs['top_n'] = 2
        f.attrs['n_ranks'] = 1
        f.attrs['created'] = 'synthetic'
        f.attrs['n_gpus_searched'] = N_GPUS
        f.attrs['sweep'] = 'synthetic'
        f.attrs['base_system'] = 'B200'
        f.attrs['sweep_axes'] = ','.join(a[0][0] for a in ax)
        m = f.create_group('model')
        for k, v in dict(name='gpt3_1T', seq_len=2048, embed_dim=25600, num_heads=160, depth=128, ffn_dim=102400,
                         dataset_samples=488281250).items():
            m.attrs[k] = v
        g = f.create_group('grid')
        g['n_gpus'] = N_GPUS
        for a, params in enumerate(ax):
            for name, units, values in params:
                g[name] = np.array(values)
                g[name].attrs['axis'] = a
                g[name].attrs['units'] = units
        best = np.full((n0, n1, len(N_GPUS)), np.nan)
        points = f.create_group('points')
        for i0 in range(n0):
            for i1 in range(n1):
                values = {name: vals[i0] for name, _, vals in ax[0]}
                values.update({name: vals[i1] for name, _, vals in ax[1]})
                best[i0, i1] = [throughput(values, n) for n in N_GPUS]
                p = points.create_group(str(i0 * n1 + i1))
                write_system_group(p, values, N_GPUS)
                p.attrs['index'], p.attrs['i0'], p.attrs['i1'] = i0 * n1 + i1, i0, i1
        g['best_throughput'] = best
        g['best_throughput'].attrs['units'] = 'samples/s'
        if base:
            write_system_group(f.create_group('base'), dict(BASE), N_GPUS)


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('out')
    ap.add_argument('--zipped', action='store_true', help='two parameters per axis (flops_capacity-like)')
    ap.add_argument('--no-base', action='store_true', help='leave out the /base group')
    args = ap.parse_args()
    make(args.out, args.zipped, not args.no_base)
