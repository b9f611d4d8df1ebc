#!/usr/bin/python3
"""End-to-end tests of hardware design-space sweeps (`sweep --sweep FILE`).

  test_hw_sweep.py grid    SWEEP_BIN REPO DATA_DIR OUT_DIR
      Runs the paper's two sweeps (sweeps/bw_capacity.yaml, sweeps/flops_capacity.yaml) for 1d
      gpt3_1T and checks: the /grid axes and every point's swept values equal the reference's
      sweep_utils grids (DATA_DIR/grids.json) bit for bit; point index = i0 x n1 + i1; the grid's
      best throughput equals each point's t_max; the grid points the reference was run on
      (DATA_DIR/<strategy>_<sweep>_<index>.json) match it bit for bit, including 2d-seqp points run as
      one-point sweeps; the XDMF sidecar names datasets that exist with the right shapes.
  test_hw_sweep.py plain   SWEEP_BIN REPO OUT_DIR
      A point's results equal a plain run (`sweep --system`) of the same system.
  test_hw_sweep.py resume  SWEEP_BIN REPO OUT_DIR SIGNAL [MPIEXEC]
      Kills a 2d sweep (the whole process group, with SIGKILL or SIGTERM) 40% of the way through
      (once some points are journaled), checks that no final file exists, that a journal from other inputs is refused, and
      that --resume finishes with datasets identical to an uninterrupted run's.
  test_hw_sweep.py paraview OUT_DIR.h5
      Opens the .xmf sidecar with pvpython; exits 77 (skipped) when pvpython is not installed.
"""
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'scripts'))
sys.path.insert(0, HERE)
import perfsweep_h5 as ps  # noqa: E402
from compare_h5 import main as compare_files  # noqa: E402
from test_paper_h5 import TALLY, compare_group, same  # noqa: E402

SKIP = 77
SWEPT = ('hbm_capacity', 'hbm_bandwidth', 'matrix_flops_fp16', 'vector_flops_fp16')


def run(cmd, **kw):
    print('$', ' '.join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def check_grid_file(path, grid, zipped):
    """Axes, point values and the index layout against the reference's grids; returns #mismatches."""
    bad = 0
    with h5py.File(path, 'r') as f:
        g = f['grid']
        n0 = len(grid['hbm_capacity'])
        n1 = len(grid['matrix_flops_fp16'] if zipped else grid['hbm_bandwidth'])
        assert g['best_throughput'].shape[:2] == (n0, n1), g['best_throughput'].shape
        for key in SWEPT:
            if key not in grid:
                continue
            got = g[key][()]
            want = np.array(grid[key])
            exact = int(np.sum(got == want))
            print(f'{path}: /grid/{key}: {len(want)} values, {exact} bit-identical to the reference')
            bad += sum(not same(float(a), float(b)) for a, b in zip(got, want)) + (len(got) != len(want))
        n_gpus = list(g['n_gpus'][()])
        best = g['best_throughput'][()]
        points = grid['points']
        assert len(f['points']) == len(points) == n0 * n1
        for index, p in enumerate(points):
            pt = f[f'points/{index}']
            i0, i1 = int(pt.attrs['i0']), int(pt.attrs['i1'])
            bad += (index != i0 * n1 + i1)
            values = dict(zip(('hbm_bandwidth', 'hbm_capacity', 'matrix_flops_fp16', 'vector_flops_fp16'), p))
            for key, want in values.items():
                if not same(float(pt.attrs[key]), want):
                    bad += 1
                    print(f'point {index}: {key} = {pt.attrs[key]!r}, reference {want!r}')
            # /grid/best_throughput holds each point's best throughput at every GPU count
            row = dict(zip(pt['n_gpus'][()], pt['t_max'][()]))
            for k, n in enumerate(n_gpus):
                v = best[i0, i1, k]
                bad += not ((math.isnan(v) and n not in row) or (n in row and v == row[n]))
    return bad


def check_xdmf(h5path):
    """The sidecar references existing datasets with the shapes it declares."""
    xmf = os.path.splitext(h5path)[0] + '.xmf'
    root = ET.parse(xmf).getroot()
    items = [d for d in root.iter('DataItem') if d.get('Format') == 'HDF']
    assert items, xmf
    with h5py.File(h5path, 'r') as f:
        for d in items:
            file, dset = d.text.strip().split(':')
            assert file == os.path.basename(h5path), (file, h5path)
            dims = tuple(int(x) for x in d.get('Dimensions').split())
            assert f[dset].shape == dims, (dset, f[dset].shape, dims)
        topo = root.find('.//Topology')
        assert tuple(int(x) for x in topo.get('Dimensions').split()) == f['grid/best_throughput'].shape[:2]
        n_attr = sum(1 for _ in root.iter('Attribute'))
        # best_throughput, speedup and (with the model's dataset_samples) days per GPU count
        metrics = 3 if 'grid/days' in f else 2
        assert n_attr == metrics * len(f['grid/n_gpus']), n_attr
    assert ps.check_sidecar(h5path) == xmf  # records the SHA-256 of the .h5 beside it
    print(f'{xmf}: {len(items)} HDF data items, {n_attr} point-data arrays, consistent with {h5path}')


def one_point_sweep(path, sweep, system):
    """A sweep file holding one point of the paper's sweep `sweep`, as one-element list axes laid
    out as in sweeps/<sweep>.yaml."""
    if sweep == 'bw_capacity':
        axes = [['hbm_capacity'], ['hbm_bandwidth']]
    else:
        axes = [['hbm_bandwidth', 'hbm_capacity'], ['matrix_flops_fp16', 'vector_flops_fp16']]
    with open(path, 'w') as out:
        out.write('base: {system: B200, nvs: 8}\naxes:\n')
        for keys in axes:
            out.write('  - ' + '\n    '.join(f'{k}: [{float(system[k])!r}]' for k in keys) + '\n')
    return [k for keys in axes for k in keys]


def cmd_grid(sweep, repo, data_dir, out):
    os.makedirs(out, exist_ok=True)
    grids = json.load(open(os.path.join(data_dir, 'grids.json')))
    bad = compared = 0
    for name, zipped in (('bw_capacity', False), ('flops_capacity', True)):
        h5 = os.path.join(out, f'{name}_1d.h5')
        run([sweep, '--sweep', os.path.join(repo, 'sweeps', f'{name}.yaml'), '--model', 'gpt3_1T', '--strat', '1d',
             '-q', '-o', h5])
        bad += check_grid_file(h5, grids[name], zipped)
        check_xdmf(h5)
        for fixture in sorted(os.listdir(data_dir)):
            if not fixture.startswith(f'1d_{name}_'):
                continue
            golden = json.load(open(os.path.join(data_dir, fixture)))
            with h5py.File(h5, 'r') as f:
                sweep_strategy = ps._text(f.attrs['strategy'])
                searched = f.attrs['n_gpus_searched']
                loaded = ps.load_group(f[f'points/{golden["point"]}'], sweep_strategy, searched)
            c, fails = compare_group(fixture, loaded, golden)
            print(f'{fixture}: point {golden["point"]}: {c} stats values compared, {fails} mismatches')
            compared += c
            bad += fails
    # Reference runs of other strategies: the point alone, as a one-point sweep of list axes.
    for fixture in sorted(os.listdir(data_dir)):
        if not fixture.startswith('2d'):
            continue
        golden = json.load(open(os.path.join(data_dir, fixture)))
        strat = golden['strategy']
        point = golden['system']
        yaml = os.path.join(out, fixture.replace('.json', '.yaml'))
        swept = one_point_sweep(yaml, golden['sweep'], point)
        h5 = yaml.replace('.yaml', '.h5')
        run([sweep, '--sweep', yaml, '--model', 'gpt3_1T', '--strat', strat, '-q', '-o', h5])
        with h5py.File(h5, 'r') as f:
            for k in swept:
                assert f['points/0'].attrs[k] == point[k], (k, f['points/0'].attrs[k], point[k])
            loaded = ps.load_group(f['points/0'], strat, f.attrs['n_gpus_searched'])
        c, fails = compare_group(fixture, loaded, golden)
        print(f'{fixture}: {c} stats values compared, {fails} mismatches')
        compared += c
        bad += fails
    print(f'grid test: {compared} reference stats values compared ({TALLY["compared"]} values in all), {bad} '
          f'mismatches, largest relative difference {TALLY["largest"]:.3g}')
    return 1 if bad else 0


def cmd_plain(sweep, repo, out):
    os.makedirs(out, exist_ok=True)
    grid_h5 = os.path.join(out, 'plain_grid.h5')
    run([sweep, '--sweep', os.path.join(repo, 'sweeps', 'flops_capacity.yaml'), '--model', 'gpt3_1T', '--strat',
         '2d-seqp', '--n-gpus', '256:2048', '-q', '-o', grid_h5])
    bad = 0
    for index in (0, 57, 219):
        with h5py.File(grid_h5, 'r') as f:
            attrs = dict(f[f'points/{index}'].attrs)
        yaml = os.path.join(out, f'point{index}.yaml')
        with open(yaml, 'w') as y:
            for k, v in attrs.items():
                if k in ('name', 'index', 'i0', 'i1', 'nvs', 'comm_model', 'attribute_units') or k.startswith('runtime'):  # not system keys
                    continue
                y.write(f'{k}: {v.item()!r}\n')
            y.write(f'nvlink_size: {int(attrs["nvs"])}\n')
        plain = os.path.join(out, f'point{index}.h5')
        run([sweep, '--system', yaml, '--model', 'gpt3_1T', '--strat', '2d-seqp', '--n-gpus', '256:2048', '-q',
             '-o', plain])
        with h5py.File(grid_h5, 'r') as f, h5py.File(plain, 'r') as g:
            (group,) = ps.systems(plain)
            a, b = f[f'points/{index}'], g[group]
            names = []
            a.visit(lambda n: names.append(n) if isinstance(a[n], h5py.Dataset) else None)
            for n in names:
                same = a[n].dtype == b[n].dtype and a[n].shape == b[n].shape and \
                    a[n][()].tobytes() == b[n][()].tobytes()
                bad += not same
                if not same:
                    print(f'point {index}: {n} differs from the plain run')
            print(f'point {index}: {len(names)} datasets compared with the plain run of {yaml}')
    return 1 if bad else 0


def journal_records(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def cmd_resume(sweep, repo, out, sig, mpiexec=None):
    os.makedirs(out, exist_ok=True)
    sig = getattr(signal, sig)
    spec = os.path.join(out, 'resume_grid.yaml')
    with open(spec, 'w') as f:
        f.write('base: {system: B200, nvs: 8}\naxes:\n'
                '  - hbm_capacity: {linspace: [80, 1000, 6]}\n'
                '  - hbm_bandwidth: {linspace: [500, 16000, 24]}\n')
    args = ['--sweep', spec, '--model', 'gpt3_1T', '--strat', '2d', '--n-gpus', '64:16384']
    launcher = [mpiexec, '-n', '2', '--oversubscribe'] if mpiexec else []
    full = os.path.join(out, f'full_{sig.name}.h5')
    t0 = time.time()
    run(launcher + [sweep] + args + ['-q', '-o', full])
    t_full = time.time() - t0

    killed = os.path.join(out, f'killed_{sig.name}.h5')
    journal = killed + '.journal'
    for p in (killed, journal):
        if os.path.exists(p):
            os.remove(p)
    proc = subprocess.Popen(launcher + [sweep] + args + ['-q', '-o', killed], start_new_session=True)
    header = None
    t_kill = time.time()
    while proc.poll() is None:
        size = journal_records(journal)
        if header is None and size > 0:
            header = size  # the header is written first, alone
        if header is not None and size > header and time.time() - t_kill > 0.4 * t_full:
            break
        time.sleep(0.002)
    if proc.poll() is not None:
        print('the run finished before it could be killed; make the grid larger')
        return 1
    os.killpg(proc.pid, sig)
    proc.wait()
    t_killed = time.time() - t_kill
    print(f'{sig.name} after {t_killed:.2f} s; journal {journal_records(journal)} bytes')
    if os.path.exists(killed):
        print(f'{killed} exists after the kill')
        return 1
    assert os.path.exists(journal), journal

    # A journal of other inputs is refused, and left alone.
    size_before = journal_records(journal)
    other = subprocess.run([sweep] + args[:-2] + ['--n-gpus', '64:8192', '-q', '--resume', '-o', killed],
                           capture_output=True, text=True)
    print(other.stderr.strip())
    if other.returncode == 0 or 'other inputs' not in other.stderr or journal_records(journal) != size_before:
        print('a journal of other inputs was not refused')
        return 1

    t0 = time.time()
    res = run(launcher + [sweep] + args + ['--resume', '-o', killed], capture_output=True, text=True)
    t_resume = time.time() - t0
    log = res.stderr + res.stdout
    print(log.strip())
    line = [ln for ln in log.splitlines() if 'resuming from' in ln]
    assert line, 'no resume line in the log'
    if 'did not re-evaluate' in log:
        print('intact journal records did not re-evaluate bit for bit')
        return 1
    done = int(line[0].split(': ')[-1].split(' of ')[0])
    print(f'full run {t_full:.2f} s; killed after {t_killed:.2f} s with {done} points journaled; '
          f'resumed run {t_resume:.2f} s')
    if done == 0:
        print('nothing was journaled before the kill')
        return 1
    if os.path.exists(journal):
        print('the journal outlived the finished run')
        return 1
    return compare_files([full, killed])


# ParaView's two XDMF readers, as VTK classes (paraview.simple's Fetch() zeroes the tail of
# rectilinear point arrays in ParaView 5.11, a bug of the fetch, not of the file).
PV_SCRIPT = """
import json, sys
from vtkmodules.vtkIOXdmf2 import vtkXdmfReader
from vtkmodules.vtkIOXdmf3 import vtkXdmf3Reader
xmf, names = sys.argv[1], sys.argv[2:]
out = {}
for reader in (vtkXdmfReader(), vtkXdmf3Reader()):
    reader.SetFileName(xmf)
    reader.Update()
    grid = reader.GetOutputDataObject(0)
    pd = grid.GetPointData()
    arrays = {}
    for name in names:
        a = pd.GetArray(name)
        arrays[name] = None if a is None else [a.GetValue(i) for i in range(a.GetNumberOfTuples())]
    out[reader.GetClassName()] = {'type': grid.GetClassName(), 'dims': list(grid.GetDimensions()),
                                  'bounds': list(grid.GetBounds()), 'arrays': arrays}
print('JSON' + json.dumps(out).replace('NaN', 'null'))
"""


def cmd_paraview(h5):
    """ParaView's XDMF readers (xdmf2 and xdmf3) open the sidecar as an n1 x n0 rectilinear grid
    spanning the axes' values, with point arrays equal to the HDF5's best throughput."""
    pv = shutil.which('pvpython')
    if not pv:
        print('pvpython not installed: skipped')
        return SKIP
    xmf = os.path.splitext(h5)[0] + '.xmf'
    with h5py.File(h5, 'r') as f:
        best = f['grid/best_throughput'][()]
        n_gpus = f['grid/n_gpus'][()]
        ax0 = ps._axes_attr(f.attrs['sweep_axes'])
        y = f[f'grid/{ax0[0].strip()}'][()]
        x = f[f'grid/{ax0[1].strip()}'][()] if len(ax0) > 1 else np.zeros(1)
    names = [f'best_throughput_{n}_gpus' for n in n_gpus]
    script = os.path.join(os.path.dirname(h5), 'paraview_check.py')
    with open(script, 'w') as out:
        out.write(PV_SCRIPT)
    res = subprocess.run([pv, script, xmf, *names], capture_output=True, text=True, timeout=600)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith('JSON')]
    if res.returncode != 0 or not lines:
        print(res.stdout[-3000:], res.stderr[-3000:])
        return 1
    got = json.loads(lines[-1][4:])
    bad = 0
    n0, n1 = best.shape[:2]
    for reader, d in got.items():
        ok = d['type'] == 'vtkRectilinearGrid' and d['dims'][:2] == [n1, n0] and \
            d['bounds'][:4] == [x.min(), x.max(), y.min(), y.max()]
        for k, name in enumerate(names):
            vals = d['arrays'][name]
            want = best[:, :, k].reshape(-1)
            same = vals is not None and len(vals) == want.size and all(
                (w != w and v is None) or (v is not None and v == w) for v, w in zip(vals, want))
            ok = ok and same
        print(f'{reader}: {n1} x {n0} grid, {len(names)} arrays: {"equal to the HDF5" if ok else "DIFFERENT"}')
        bad += not ok
    return 1 if bad else 0


if __name__ == '__main__':
    cmd, rest = sys.argv[1], sys.argv[2:]
    sys.exit({'grid': cmd_grid, 'plain': cmd_plain, 'resume': cmd_resume, 'paraview': cmd_paraview}[cmd](*rest))
