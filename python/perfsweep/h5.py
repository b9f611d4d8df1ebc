#!/usr/bin/env python3
"""Read perfsweep's HDF5 output (schema perfsweep/1): as pandas and xarray objects, or the way
the reference's npy files are read (docs/python.md has examples).

    import perfsweep.h5 as ps          # or scripts/perfsweep_h5.py, which is this module
    df = ps.dataframe('outputs/exec_1d_gpt3_1T.h5')       # one row per (system, GPU count, rank)
    ds = ps.open_grid('outputs/sweep_bw_capacity_1d_gpt3_1T.h5')   # xarray Dataset of a hardware sweep

    import perfsweep_h5 as ps
    nvs, t_max, t_min, n_gpus, configs = ps.load('outputs/exec_1d_gpt3_1T.h5', 'A100-NVS4')
    # configs[i]: list of (throughput, mem, config dict, stats dict), fastest first

is exactly what `np.load('outputs/exec_1d_gpt3_1T_A100-NVS4.npy', allow_pickle=True)[0]` gives
for the reference. `to_npy` writes those npy files, so the reference's plotting notebooks run
unchanged on perfsweep's output:

    /usr/bin/python3 scripts/perfsweep_h5.py to-npy outputs/exec_1d_gpt3_1T.h5 outputs/
    /usr/bin/python3 scripts/perfsweep_h5.py summary outputs/exec_1d_gpt3_1T.h5
    /usr/bin/python3 scripts/perfsweep_h5.py check-sidecar outputs/sweep_bw_capacity_1d_gpt3_1T.h5

On a hardware-sweep file, to-npy writes one npy per point as the reference's sweep scripts do
(outputs/sweeps/sweep_bw_cap_<strat>_<model>_B200-<index>.npy, sweep_flop_cap_... for the FLOP/s
sweep), which its plots_sweep_bw_capacity and plots_sweep_flops_cap_bw notebooks read.
"""
import argparse
import os
import sys

import h5py
import numpy as np

from .sidecar import check_sidecar  # noqa: F401 (part of this module's interface)

SCHEMA = 'perfsweep/1'
# The reference's key orders (execution.py): config dicts per strategy, then totals() stats.
CONFIG_KEYS = {'1d': ['dp', 'tp', 'pp', 'mbs'],
               '2d': ['dp', 'tp', 'tp1', 'tp2', 'pp', 'mbs', 'nb'],
               '2d-seqp': ['dp', 'tp', 'tp1', 'tp2', 'pp', 'mbs']}
STATS_KEYS = ['t', 'flops_per_gpu', 'mem', 't_comp', 't_mem', 't_tp_comm', 't_dp_comm', 't_pp_comm',
              't_bubble', 'comp_frac', 'tp_comm_frac', 'dp_comm_frac', 'pp_comm_frac', 'bubble_frac',
              'mem_frac', 'wts_mem', 'wts_grad_mem', 'wts_optimizer_states_mem', 'acts_mem']
NV_KEYS = {'1d': ['nv_tp', 'nv_dp', 'nv_pp'],
           '2d': ['nv_tp1', 'nv_tp2', 'nv_dp', 'nv_pp'],
           '2d-seqp': ['nv_tp1', 'nv_tp2', 'nv_dp', 'nv_pp']}
# Keys beyond the reference's (model/plan.hpp kConfigKeys' omitted_at): the reference's tuple
# holds them only where they differ from its value (context parallelism's cp and nv_cp, 1).
OMITTED_AT = {'cp': 1, 'nv_cp': 1}
# Root groups that are not systems: metadata, and a hardware sweep's grid, points, base system and
# ParaView slices.
NON_SYSTEM_GROUPS = ('model', 'provenance', 'grid', 'points', 'base', 'xdmf')
# The reference's npy prefixes of its two sweep scripts (sweeps/run_configs_sweep_*.py).
SWEEP_NPY_PREFIX = {'bw_capacity': 'sweep_bw_cap', 'flops_capacity': 'sweep_flop_cap'}


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def open_run(path):
    """Opens a perfsweep HDF5 file, checking its schema."""
    f = h5py.File(path, 'r')
    schema = _text(f.attrs.get('schema', b''))
    if schema != SCHEMA:
        f.close()
        raise ValueError(f'{path}: not a perfsweep output (schema {schema!r}, expected {SCHEMA!r})')
    return f


def systems(path):
    """Names of the system groups (e.g. 'A100-NVS4') in file order of creation."""
    with open_run(path) as f:
        return [k for k in f.keys() if k not in NON_SYSTEM_GROUPS]


def config_keys(f, strategy):
    """The configuration columns of top/: the file's `config_keys` attribute (root, or the top/
    group) when it has one, else the reference's keys of the strategy."""
    for holder in (f, ):
        if 'config_keys' in holder.attrs:
            return _axes_attr(holder.attrs['config_keys'])
    return CONFIG_KEYS[strategy]


def _config_keys_of_group(group, strategy):
    if 'config_keys' in group['top'].attrs:
        return _axes_attr(group['top'].attrs['config_keys'])
    return config_keys(group.file, strategy)


def is_hw_sweep(path):
    """True for a hardware-sweep file (sweep --sweep): it has /grid."""
    with open_run(path) as f:
        return 'grid' in f


def groups(path):
    """Every result group: the systems of a plain run, or 'points/<i>' in index order and 'base'
    of a hardware sweep."""
    with open_run(path) as f:
        if 'grid' not in f:
            return [k for k in f.keys() if k not in NON_SYSTEM_GROUPS]
        pts = sorted(f['points'].keys(), key=int) if 'points' in f else []
        return [f'points/{p}' for p in pts] + (['base'] if 'base' in f else [])


# Values of the execution options by code, for files that wrote codes (before names; sp had no
# `codes` attribute): model/execution_options.hpp's names.
OLD_OPTION_NAMES = {'sp': ['off', 'on']}


def _codes_attr(ds):
    """The names of an option column's `codes` attribute ("0 none, 1 selective, 2 full"), by code."""
    codes = ds.attrs.get('codes')
    if codes is None:
        return None
    names = {}
    for item in _text(codes).split(','):
        code, _, name = item.strip().partition(' ')
        names[int(code)] = name
    return [names[i] for i in sorted(names)]


def option_names(ds):
    """An execution-option column of top/ as names (a numpy array of str): a text column as it is,
    an older file's integer codes by its `codes` attribute (sp: off, on). None for a column of numbers."""
    data = ds[()]
    if data.dtype.kind in 'SO':
        return np.array([_text(v) for v in data], dtype=object)
    names = _codes_attr(ds) or OLD_OPTION_NAMES.get(ds.name.rsplit('/', 1)[-1])
    if names is None:
        return None
    return np.array([names[int(v)] if 0 <= int(v) < len(names) else str(int(v)) for v in data], dtype=object)


def option_order(ds):
    """An option column's values in the option's order (its `codes` attribute), [] when it has none."""
    return _codes_attr(ds) or OLD_OPTION_NAMES.get(ds.name.rsplit('/', 1)[-1]) or []


def _categorical(values, ds):
    """Names as a pandas Categorical whose categories are the option's values in their order."""
    import pandas as pd
    order = _codes_attr(ds) or OLD_OPTION_NAMES.get(ds.name.rsplit('/', 1)[-1]) or sorted(set(values))
    order = list(order) + sorted(set(values) - set(order))
    return pd.Categorical(values, categories=order)


def dataframe(path, system=None):
    """The top configurations as one tidy pandas DataFrame: a row per (system, GPU count, rank)
    with columns system, nvs, n_gpus, rank, throughput (samples/s), mem (GB), the strategy's
    configuration keys, every stats key and the nv_* keys, the execution options by name as
    categoricals (recompute 'none', 'selective', 'full'; also from older files, which wrote codes),
    and mem_limit (GB: what the runtime can allocate; under the reference runtime the HBM capacity)
    and mem_headroom (mem_limit - mem). top/count, a per-GPU-count tally, is left out. system: one
    group name, a list of them, or None for all (a hardware sweep's groups are 'points/<i>' and
    'base'). Strings are Python str. df.attrs['units'] maps each column with a unit to it ('s',
    'GB', 'samples/s', '1' for fractions); df.attrs also holds the run's strategy, model, global
    batch size and file.

        df = dataframe('outputs/exec_1d_gpt3_1T.h5')
        best = df[df['rank'] == 0]            # the best configuration per system and GPU count
        df.attrs['units']['t']                # 's'
    """
    import pandas as pd
    names = groups(path) if system is None else [system] if isinstance(system, str) else list(system)
    frames = []
    named_columns = {}  # option name -> a dataset of it (its codes attribute orders the categories)
    units = {'nvs': 'GPUs per NVLink domain'}
    with open_run(path) as f:
        strategy = _text(f.attrs['strategy'])
        info = {'file': str(path), 'strategy': strategy, 'model': _text(f.attrs['model']),
                'global_batch_size': int(f.attrs['global_batch_size'])}
        for name in names:
            if name not in f:
                raise KeyError(f'{path}: no system group {name!r}; have {groups(path)[:12]}')
            g = f[name]
            top = g['top']
            n_rows = len(top['rank'])
            keys = _config_keys_of_group(g, strategy)
            execution = _axes_attr(top.attrs.get('execution_keys', ''))
            cols = {'system': [name] * n_rows, 'nvs': np.full(n_rows, int(g.attrs['nvs']), dtype=np.int64)}
            ordered = ['n_gpus', 'rank', 'throughput', 'mem'] + keys + \
                [k for k in STATS_KEYS if k != 'mem'] + NV_KEYS.get(strategy, [])
            ordered += [k for k in top.keys() if k not in ordered and k != 'count']  # columns a newer file adds
            for k in ordered:
                if k not in top:
                    continue
                ds = top[k]
                named = option_names(ds) if k in execution or ds.dtype.kind in 'SO' else None
                cols[k] = named if named is not None else ds[()]
                unit = ds.attrs.get('units')
                if unit is not None and named is None:
                    units[k] = _text(unit)
            if 'mem_limit' not in cols:  # the reference runtime's limit: the HBM capacity
                cols['mem_limit'] = np.full(n_rows, float(g.attrs['hbm_capacity']))
                units['mem_limit'] = 'GB'
            if 'mem_headroom' not in cols:
                cols['mem_headroom'] = cols['mem_limit'] - np.asarray(cols['mem'], dtype=float)
                units['mem_headroom'] = 'GB'
            frames.append(pd.DataFrame(cols))
            for k in execution:
                if k in top and k not in named_columns and cols[k].dtype == object:
                    named_columns[k] = top[k]
        if not frames:
            return pd.DataFrame()
        df = pd.concat(frames, ignore_index=True)
        # the options by name, as categoricals in the option's order (none, selective, full)
        for k, ds in named_columns.items():
            df[k] = _categorical(list(df[k]), ds)
    df['system'] = df['system'].astype(object)
    df.attrs.update(info)
    df.attrs['units'] = units
    return df


def _best_by_n(group):
    """{n_gpus: best throughput} of a result group."""
    n, t, _ = best_of_group(group)
    return dict(zip(n.tolist(), t.tolist()))


def open_grid(path):
    """A hardware sweep as an xarray Dataset: dimensions (axis 0 parameter, axis 1 parameter,
    n_gpus), every swept parameter a coordinate with its units (a zipped parameter is a non-index
    coordinate along its axis's dimension), and the variables
      best_throughput  samples/s, NaN where nothing fits
      speedup          best_throughput over the base system's (/base) at the same GPU count
      days             training days, /model dataset_samples / best_throughput / 86400 (only when
                       the model has dataset_samples)

        ds = open_grid('outputs/sweep_flops_capacity_1d_gpt3_1T.h5')
        ds.speedup.sel(n_gpus=8192, matrix_flops_fp16=2500)
    """
    import xarray as xr
    g = grid(path)
    dims = [a[0][0] for a in g['axes'] if a] + ['n_gpus']
    best_tp = g['best_throughput'] if len(dims) == 3 else g['best_throughput'][:, 0, :]
    coords = {'n_gpus': ('n_gpus', g['n_gpus'], {'units': 'GPUs'})}
    for axis in g['axes']:
        for name, units, values in axis:
            coords[name] = (axis[0][0], values, {'units': units, 'axis': g['axes'].index(axis)})
    with open_run(path) as f:
        base = _best_by_n(f['base']) if 'base' in f else {}
        samples = float(f['model'].attrs.get('dataset_samples', 0)) if 'model' in f else 0.0
        attrs = {k: _text(f.attrs[k]) for k in ('sweep', 'base_system', 'strategy', 'model') if k in f.attrs}
    base_tp = np.array([base.get(int(n), np.nan) for n in g['n_gpus']], dtype=float)
    data = {'best_throughput': (dims, best_tp, {'units': 'samples/s'}),
            'speedup': (dims, best_tp / base_tp, {'units': '1', 'long_name': 'speed-up over the base system'})}
    if samples > 0:
        data['days'] = (dims, samples / best_tp / 86400.0, {'units': 'days', 'long_name': 'training time'})
    attrs['base_throughput'] = base_tp
    return xr.Dataset(data, coords=coords, attrs=attrs)


def top_table(group, strategy):
    """The top/ table of a system group as a dict of numpy columns."""
    top = group['top']
    return {k: top[k][()] for k in top.keys()}


def load_group(group, strategy, n_gpus_searched):
    """(nvs, t_max, t_min, n_gpus, configs) of one group, as the reference's npy holds them."""
    nvs = int(group.attrs['nvs'])
    t_max = [float(x) for x in group['t_max'][()]]
    t_min = [float(x) for x in group['t_min'][()]]
    n_gpus = np.asarray(group['n_gpus'][()], dtype=np.int64)
    cols = top_table(group, strategy)
    counts = cols['count']
    keys = _config_keys_of_group(group, strategy)
    configs = []
    row = 0
    for c in counts:
        entries = []
        for r in range(row, row + int(c)):
            config = {k: int(cols[k][r]) for k in keys}
            config = {k: v for k, v in config.items() if OMITTED_AT.get(k) != v}
            stats = {k: float(cols[k][r]) for k in STATS_KEYS}
            stats.update({k: int(cols[k][r]) for k in NV_KEYS[strategy]})
            entries.append((float(cols['throughput'][r]), float(cols['mem'][r]), config, stats))
        configs.append(entries)
        row += int(c)
    if len(n_gpus) == 0:
        # The reference keeps every GPU count searched when none is feasible (start stays None).
        n_gpus = np.asarray(n_gpus_searched, dtype=np.int64)
        configs = [[] for _ in n_gpus]
    return nvs, t_max, t_min, n_gpus, configs


def load(path, system):
    """The reference's npy tuple for one system group of a perfsweep file."""
    with open_run(path) as f:
        strategy = _text(f.attrs['strategy'])
        if system not in f:
            raise KeyError(f'{path}: no system group {system!r}; have {systems(path)}')
        return load_group(f[system], strategy, f.attrs['n_gpus_searched'])


def run_info(path):
    """Root and /model attributes as plain Python values: strategy, model, global_batch_size,
    n_gpus_searched, model_params (dict of /model attributes; dataset_samples only if written)."""
    with open_run(path) as f:
        params = {k: (_text(v) if isinstance(v, (bytes, str)) else v.item() if hasattr(v, 'item') else v)
                  for k, v in f['model'].attrs.items()} if 'model' in f else {}
        return {'strategy': _text(f.attrs['strategy']),
                'model': _text(f.attrs['model']),
                'global_batch_size': int(f.attrs['global_batch_size']),
                'n_gpus_searched': [int(n) for n in f.attrs['n_gpus_searched']],
                'model_params': params}


def best_of_group(group):
    """(n_gpus, throughput, row) of the fastest configuration at each feasible GPU count of a
    system group, read from top/ (rank 0 rows); row indexes the top/ columns."""
    top = group['top']
    rank = top['rank'][()]
    rows = np.flatnonzero(rank == 0)
    return (np.asarray(top['n_gpus'][()][rows], dtype=np.int64),
            np.asarray(top['throughput'][()][rows], dtype=float), rows)


def best(path, system):
    """(n_gpus, best throughput in samples/s) at each feasible GPU count of one system group
    (or sweep point 'points/<i>', or 'base')."""
    with open_run(path) as f:
        if system not in f:
            raise KeyError(f'{path}: no system group {system!r}; have {systems(path)}')
        n, t, _ = best_of_group(f[system])
        return n, t


def grid(path):
    """A hardware sweep's /grid as a dict: axes (list of two lists of (name, units, values), the
    axis's first parameter first; a one-axis sweep has an empty second list), n_gpus,
    best_throughput [axis 0][axis 1][GPU count] (NaN where nothing fits), base_system (or None),
    base_values {parameter: value} from the /base group's attributes (empty if /base is absent)."""
    with open_run(path) as f:
        if 'grid' not in f:
            raise ValueError(f'{path}: no /grid group; not a hardware-sweep output (run sweep --sweep)')
        g = f['grid']
        order = [n.strip() for n in _axes_attr(f.attrs.get('sweep_axes', ''))]
        axes = [[], []]
        for name, ds in g.items():
            if name in ('n_gpus', 'best_throughput') or 'axis' not in ds.attrs:
                continue
            axes[int(ds.attrs['axis'])].append((name, _text(ds.attrs.get('units', '')),
                                                np.asarray(ds[()], dtype=float)))
        for a in axes:  # the axis's named (first) parameter leads, then the zipped ones by name
            a.sort(key=lambda p: (p[0] not in order, p[0]))
        best_tp = np.asarray(g['best_throughput'][()], dtype=float)
        if best_tp.ndim == 2:
            best_tp = best_tp[:, np.newaxis, :]
        base_values = {}
        if 'base' in f:
            for a in axes:
                for name, _, _ in a:
                    if name in f['base'].attrs:
                        base_values[name] = float(f['base'].attrs[name])
        base = f.attrs.get('base_system')
        return {'axes': axes, 'n_gpus': np.asarray(g['n_gpus'][()], dtype=np.int64),
                'best_throughput': best_tp, 'base_system': _text(base) if base is not None else None,
                'has_base': 'base' in f, 'base_values': base_values}


def _axes_attr(v):
    if isinstance(v, (bytes, str)):
        return [x for x in _text(v).split(',') if x]
    return [_text(x) for x in v]


def npy_array(entry):
    """The object array np.save writes for the reference: shape (1, 5)."""
    arr = np.empty((1, 5), dtype=object)
    for i, v in enumerate(entry):
        arr[0, i] = v
    return arr


def to_npy(path, outdir):
    """Writes exec_<strat>_<model>_<system>.npy for every system group (a hardware sweep:
    sweeps/<prefix>_<strat>_<model>_<base>-<index>.npy for every point, as the reference's sweep
    scripts name them); returns the paths."""
    os.makedirs(outdir, exist_ok=True)
    written = []
    with open_run(path) as f:
        strategy = _text(f.attrs['strategy'])
        model = _text(f.attrs['model'])
        sweep = _text(f.attrs['sweep']) if 'grid' in f and 'sweep' in f.attrs else None
        base = _text(f.attrs.get('base_system', 'B200'))
    if sweep is not None:
        prefix = SWEEP_NPY_PREFIX.get(sweep, f'sweep_{sweep}')
        os.makedirs(os.path.join(outdir, 'sweeps'), exist_ok=True)
        for name in groups(path):
            if not name.startswith('points/'):
                continue
            out = os.path.join(outdir, 'sweeps', f'{prefix}_{strategy}_{model}_{base}-{name.split("/")[1]}.npy')
            np.save(out, npy_array(load(path, name)))
            written.append(out)
        return written
    for name in systems(path):
        entry = load(path, name)
        out = os.path.join(outdir, f'exec_{strategy}_{model}_{name}.npy')
        np.save(out, npy_array(entry))
        written.append(out)
    return written


def summary(path):
    if is_hw_sweep(path):
        return hw_summary(path)
    with open_run(path) as f:
        print(f"{path}: strategy {_text(f.attrs['strategy'])}, model {_text(f.attrs['model'])}, "
              f"global batch {int(f.attrs['global_batch_size'])}, top {int(f.attrs['top_n'])}, "
              f"{int(f.attrs['n_ranks'])} rank(s), created {_text(f.attrs['created'])}")
        strategy = _text(f.attrs['strategy'])
    for name in systems(path):
        nvs, t_max, t_min, n_gpus, configs = load(path, name)
        if not t_max:
            print(f'  {name:16s} no feasible configuration')
            continue
        best = [c[0] for c in configs if c]
        print(f'  {name:16s} feasible from {n_gpus[0]} GPUs; best at {n_gpus[-1]} GPUs: '
              f'{t_max[-1]:.4g} samples/s with {best[-1][2]}')


def hw_summary(path):
    """A hardware sweep: its axes, and per GPU count the base's throughput, the best point and
    the range of speed-ups."""
    with open_run(path) as f:
        print(f"{path}: hardware sweep {_text(f.attrs.get('sweep', '?'))} around "
              f"{_text(f.attrs.get('base_system', '?'))}-NVS{int(f.attrs.get('nvs', 0))}, strategy "
              f"{_text(f.attrs['strategy'])}, model {_text(f.attrs['model'])}, created {_text(f.attrs['created'])}")
    ds = open_grid(path)
    for d in ds.best_throughput.dims[:-1]:
        v = ds[d].values
        print(f"  axis {d} ({ds[d].attrs.get('units', '')}): {len(v)} values {v[0]:g} .. {v[-1]:g}")
    for i, n in enumerate(ds.n_gpus.values):
        s = ds.speedup.isel(n_gpus=i).values
        b = ds.best_throughput.isel(n_gpus=i).values
        if np.all(np.isnan(b)):
            print(f'  {n:6d} GPUs: no point fits')
            continue
        flat = int(np.nanargmax(b))
        at = np.unravel_index(flat, b.shape)
        where = ', '.join(f'{d}={ds[d].values[j]:g}' for d, j in zip(ds.best_throughput.dims[:-1], at))
        base = ds.attrs['base_throughput'][i]
        sp = f'speed-up {np.nanmin(s):.3g}x..{np.nanmax(s):.3g}x' if not np.isnan(base) else 'base does not fit'
        print(f'  {n:6d} GPUs: best {np.nanmax(b):.4g} samples/s at {where}; base {base:.4g}; {sp}; '
              f'{int(np.sum(~np.isnan(b)))} of {b.size} points fit')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('to-npy', help="write the reference's npy files")
    p.add_argument('file')
    p.add_argument('outdir')
    p = sub.add_parser('summary', help='one line per system')
    p.add_argument('file')
    p = sub.add_parser('check-sidecar', help="check that a hardware sweep's .xmf belongs to its .h5")
    p.add_argument('file')
    args = ap.parse_args(argv)
    try:
        if args.cmd == 'to-npy':
            for out in to_npy(args.file, args.outdir):
                print(out)
        elif args.cmd == 'check-sidecar':
            print(f'{check_sidecar(args.file)} belongs to {os.path.splitext(args.file)[0]}.h5')
        else:
            summary(args.file)
    except (OSError, ValueError, KeyError) as e:
        print(f'perfsweep_h5: error: {e}', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
