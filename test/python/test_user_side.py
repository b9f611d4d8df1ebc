#!/usr/bin/python3
"""The user's side of perfsweep: what a new user runs after the tools themselves.

    test_user_side.py cli BIN_DIR OUT
      --version on every tool; the first log line (version, command line, ranks, host) and -q
      silencing it; two sweeps with different --system get different default names, and a third
      run of one is refused without --force; --dry-run prints a summary (-v: every work unit);
      estimate --csv / --csv-totals each read by pandas.read_csv, --json echoes its inputs, --help
      names the flags of each strategy, the text tables fit 120 columns.
    test_user_side.py helpers BIN_DIR REPO OUT
      on a small hardware sweep (zipped axes, as flops_capacity) and a small plain run:
      perfsweep_h5.dataframe, open_grid (.sel on a swept parameter, speedup equal to /grid/speedup,
      days), summary and to-npy on the hardware-sweep file, the self-describing attributes, and
      the sweep's closing summary.
    test_user_side.py paraview H5
      scripts/paraview_hw_sweep.py renders the sidecar of H5 headless (xvfb-run when there is no
      display); the picture is not blank. Skipped (77) without pvpython or a display.
    test_user_side.py notebooks REPO H5_PLAIN H5_GRID OUT
      executes docs/notebooks/*.ipynb with nbconvert. Skipped (77) without jupyter-nbconvert and
      ipykernel.
    test_user_side.py reference BIN_DIR REPO OUT
      with PERFSWEEP_REFERENCE_DIR (a copy of transformer-perf-estimates): writes perfsweep's npy
      files into a copy of it and runs the code of its four plotting notebooks
      (plots_overall_perf, plots_overall_perf_compare, plots_sweep_bw_capacity,
      plots_sweep_flops_cap_bw) unchanged. Skipped (77) otherwise.
"""
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts'))
import perfsweep_h5 as ps  # noqa: E402

SKIP = 77
PY = '/usr/bin/python3'
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)
    print(f'ok: {what}')


def run(cmd, expect=0, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=ENV, **kw)
    if expect is not None and p.returncode != expect:
        raise Failure(f'{" ".join(map(str, cmd))}: exit {p.returncode}, expected {expect}\n{p.stdout[-2000:]}\n'
                      f'{p.stderr[-2000:]}')
    return p


def cmd_cli(bin_dir, out):
    os.makedirs(out, exist_ok=True)
    b = lambda t: os.path.join(bin_dir, t)  # noqa: E731
    for tool in ('sweep', 'estimate', 'configs', 'comm', 'perfsweep_bench'):
        p = run([b(tool), '--version'])
        check(p.stdout.startswith('perfsweep '), f'{tool} --version: {p.stdout.strip()}')

    est = [b('estimate'), '--model', 'gpt3_1T', '--system', 'B200', '--strat', '1d', '--dp', 32, '--pp', 64,
           '--tp', 8]
    p = run(est)
    first = p.stderr.splitlines()[0] if p.stderr else ''
    check('perfsweep' in first and 'command line' in first and 'rank(s)' in first and 'host' in first,
          f'estimate logs version, command line, ranks and host first: {first}')
    check(max(len(line) for line in p.stdout.splitlines()) <= 120, 'estimate text tables fit 120 columns')
    check(run(est + ['-q']).stderr == '', 'estimate -q: nothing on stderr')
    layers = pd.read_csv(io.StringIO(run(est + ['--csv', '-q']).stdout))
    check(len(layers) == 16 and 'flops_fwd' in layers.columns, f'estimate --csv: {len(layers)} layers, one table')
    totals = pd.read_csv(io.StringIO(run(est + ['--csv-totals', '-q']).stdout))
    check(list(totals.columns) == ['quantity', 'value', 'unit'] and 't' in set(totals['quantity']),
          'estimate --csv-totals: quantity,value,unit')
    js = json.loads(run(est + ['--json', '-q']).stdout)
    inp = js['inputs']
    check(inp['model']['name'] == 'gpt3_1T' and inp['system']['name'] == 'B200' and inp['dp'] == 32 and
          inp['strategy'] == '1d' and inp['global_batch_size'] == 4096, 'estimate --json echoes its inputs')
    help_text = run([b('estimate'), '--help']).stdout
    check('2d --tp1 --tp2 --nb' in help_text, 'estimate --help names the flags each strategy needs')
    check(run([b('configs'), '--n-gpus', 64, '--system', 'B200', '--top', 1, '-q']).stderr == '',
          'configs -q: nothing on stderr')

    # Two runs on different systems do not collide; a third is refused without --force.
    sw = [b('sweep'), '--model', 'gpt3_1T', '--strat', '1d', '--n-gpus', '256:1024', '--out', out]
    for f in glob.glob(os.path.join(out, '*.h5')):
        os.remove(f)
    for system in ('B200', 'H200'):
        p = run(sw + ['--system', system])
        check('rank(s) on host' in p.stdout + p.stderr, f'sweep --system {system}: first log line')
    names = sorted(os.path.basename(f) for f in glob.glob(os.path.join(out, '*.h5')))
    check(names == ['exec_1d_gpt3_1T_B200.h5', 'exec_1d_gpt3_1T_H200.h5'], f'default names name the system: {names}')
    p = run(sw + ['--system', 'B200'], expect=2)
    check('exists' in p.stderr and '--force' in p.stderr, f'an existing output is refused: {p.stderr.strip()}')
    p = run(sw + ['--system', 'B200', '--force', '-q'])
    check(p.stdout == '' and p.stderr == '', 'sweep --force -q overwrites, silently')
    p = run(sw + ['--system', 'B200', '--dry-run'])
    check('work units' in p.stdout and 'units:' in p.stdout and len(p.stdout.splitlines()) <= 7,
          'sweep --dry-run: a summary')
    check(re.search(r'^estimated time: about \S+ (s|min|h) on one rank', p.stdout, re.M) is not None,
          'sweep --dry-run: the estimated duration')
    p = run(sw + ['--system', 'B200', '--dry-run', '-v'])
    check(len(p.stdout.splitlines()) > 6, 'sweep --dry-run -v: every work unit too')
    return 0


def cmd_helpers(bin_dir, repo, out):
    os.makedirs(out, exist_ok=True)
    sweep = os.path.join(bin_dir, 'sweep')
    hw = os.path.join(out, 'zipped.h5')
    plain = os.path.join(out, 'plain.h5')
    p = run([sweep, '--sweep', os.path.join(repo, 'test', 'python', 'data', 'hw_sweep_zipped_small.yaml'),
             '--model', 'gpt3_1T', '--strat', '1d', '--n-gpus', '512:8192', '-o', hw])
    log = p.stdout + p.stderr
    check('best point' in log and 'speed-up over the base' in log, 'sweep closes a hardware sweep with a summary')
    run([sweep, '--model', 'gpt3_1T', '--strat', '2d', '--n-gpus', '512:2048', '-q', '-o', plain])

    # pandas
    df = ps.dataframe(plain)
    check('count' not in df.columns and {'system', 'n_gpus', 'rank', 'throughput', 'tp1', 'nb', 't_comp',
                                          'nv_dp'} <= set(df.columns), 'dataframe: config and stats columns')
    check(all(type(s) is str for s in df['system']), 'dataframe: systems are str')
    best = df[df['rank'] == 0]
    with h5py.File(plain, 'r') as f:
        for system in ps.systems(plain):
            t = best[best['system'] == system]['throughput'].to_numpy()
            check(np.array_equal(t, f[system]['t_max'][()]), f'best per GPU count equals {system}/t_max')
            g = f[system]
            check('GB/s' in ps._text(g.attrs['attribute_units']) and ps._text(g['top/mbs'].attrs['units']) == 'samples',
                  f'{system}: units of the system attributes; mbs in samples')
            check('throughput' in ps._text(g['t_max'].attrs['description']), 't_max described as a throughput')
        check('host' in f.attrs and 'git_commit' in f.attrs, 'root attributes: host and git_commit')
    check(len(ps.dataframe(hw, 'base')) > 0 and len(ps.dataframe(hw)) > len(ps.dataframe(hw, 'base')),
          'dataframe of a hardware sweep: points and base')

    # xarray
    ds = ps.open_grid(hw)
    check(ds.best_throughput.dims == ('hbm_bandwidth', 'matrix_flops_fp16', 'n_gpus'), f'open_grid dims {ds.dims}')
    check('hbm_capacity' in ds.coords and ds.coords['hbm_capacity'].dims == ('hbm_bandwidth',),
          'zipped parameters are coordinates along their axis')
    sel = ds.speedup.sel(matrix_flops_fp16=2500, n_gpus=8192)
    check(sel.shape == (3,), 'open_grid(...).speedup.sel(matrix_flops_fp16=2500, n_gpus=8192)')
    with h5py.File(hw, 'r') as f:
        same = np.array_equal(ds.speedup.values, f['grid/speedup'][()], equal_nan=True)
        check(same, 'speedup over /base equals /grid/speedup')
        check(np.array_equal(ds.days.values, f['grid/days'][()], equal_nan=True), 'days equal /grid/days')
        check(b'base_system.yaml' in f['provenance'] or 'base_system.yaml' in f['provenance'],
              'provenance holds the base system YAML')

    # summary and to-npy on a hardware-sweep file
    p = run([PY, os.path.join(repo, 'scripts', 'perfsweep_h5.py'), 'summary', hw])
    check('speed-up' in p.stdout, 'perfsweep_h5.py summary on a hardware sweep')
    npy_dir = os.path.join(out, 'npy')
    shutil.rmtree(npy_dir, ignore_errors=True)
    run([PY, os.path.join(repo, 'scripts', 'perfsweep_h5.py'), 'to-npy', hw, npy_dir])
    files = sorted(glob.glob(os.path.join(npy_dir, 'sweeps', '*.npy')))
    check(len(files) == 6, f'to-npy: one npy per point ({len(files)})')
    x = np.load(os.path.join(npy_dir, 'sweeps', 'sweep_hw_sweep_zipped_small_1d_gpt3_1T_B200-4.npy'), allow_pickle=True)
    nvs, t_max, t_min, n_gpus, configs = x[0]
    want = ps.load(hw, 'points/4')
    check(x.shape == (1, 5) and nvs == 8 and t_max == want[1] and list(n_gpus) == list(want[3]),
          "a point's npy is the reference's tuple")
    return 0


def cmd_paraview(h5):
    pv = shutil.which('pvpython')
    if not pv:
        print('pvpython not installed: skipped')
        return SKIP
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts', 'paraview_hw_sweep.py')
    xmf = os.path.splitext(h5)[0] + '.xmf'
    png = os.path.splitext(h5)[0] + '_paraview.png'
    if os.path.exists(png):
        os.remove(png)
    cmd = [pv, script, xmf, '--array', 'speedup_8192_gpus', '--out', png, '--size', '800x600']
    if not os.environ.get('DISPLAY'):
        if not shutil.which('xvfb-run'):
            print('no display and no xvfb-run: skipped')
            return SKIP
        cmd = ['xvfb-run', '-a', '-s', '-screen 0 1024x768x24'] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print(p.stdout.strip())
    if p.returncode != 0 or not os.path.exists(png):
        print(p.stderr[-3000:])
        return 1
    import matplotlib.image as mpimg
    img = mpimg.imread(png)[:, :, :3]
    colours = len(np.unique((img.reshape(-1, 3) * 255).astype(np.uint8), axis=0))
    check(img.shape[:2] == (600, 800), f'{png}: 800 x 600')
    check(img.std() > 0.05 and colours > 100, f'{png} is not blank: {colours} colours, std {img.std():.3f}')
    return 0


def cmd_notebooks(repo, h5_plain, h5_grid, out):
    nbconvert = shutil.which('jupyter-nbconvert')
    try:
        import ipykernel  # noqa: F401
    except ImportError:
        nbconvert = None
    if not nbconvert:
        print('jupyter-nbconvert or ipykernel not installed: skipped')
        return SKIP
    os.makedirs(out, exist_ok=True)
    env = dict(ENV, PERFSWEEP_H5=os.path.abspath(h5_plain), PERFSWEEP_GRID=os.path.abspath(h5_grid),
               PERFSWEEP_SCRIPTS=os.path.abspath(os.path.join(repo, 'scripts')), MPLBACKEND='Agg')
    notebooks = sorted(glob.glob(os.path.join(repo, 'docs', 'notebooks', '*.ipynb')))
    check(notebooks, 'docs/notebooks has notebooks')
    for nb in notebooks:
        p = subprocess.run([nbconvert, '--to', 'notebook', '--execute', '--output-dir', out, nb],
                           capture_output=True, text=True, env=env, timeout=600)
        if p.returncode != 0:
            print(p.stderr[-4000:])
            raise Failure(f'{nb} failed')
        print(f'ok: {os.path.basename(nb)} executed')
    return 0


REFERENCE_NOTEBOOKS = ['plots_overall_perf', 'plots_overall_perf_compare', 'plots_sweep_bw_capacity',
                       'plots_sweep_flops_cap_bw']


def cmd_reference(bin_dir, repo, out):
    ref = os.environ.get('PERFSWEEP_REFERENCE_DIR')
    if not ref or not os.path.isdir(os.path.join(ref, 'plots')):
        print('PERFSWEEP_REFERENCE_DIR (a copy of transformer-perf-estimates) not given: skipped')
        return SKIP
    copy = os.path.join(out, 'reference')
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(ref, copy, ignore=shutil.ignore_patterns('outputs', '.git'))
    outputs = os.path.join(copy, 'outputs')
    sweep = os.path.join(bin_dir, 'sweep')
    tool = os.path.join(repo, 'scripts', 'perfsweep_h5.py')
    h5 = os.path.join(out, 'h5')
    for strat in ('1d', '2d'):
        f = os.path.join(h5, f'exec_{strat}.h5')
        run(['mpirun', '--oversubscribe', '-np', '2', sweep, '--model', 'gpt3_1T', '--strat', strat, '-q', '-o', f])
        run([PY, tool, 'to-npy', f, outputs])
    for name in ('bw_capacity', 'flops_capacity'):
        f = os.path.join(h5, f'{name}.h5')
        run(['mpirun', '--oversubscribe', '-np', '2', sweep, '--sweep', os.path.join(repo, 'sweeps', f'{name}.yaml'),
             '--model', 'gpt3_1T', '--strat', '1d', '-q', '-o', f])
        run([PY, tool, 'to-npy', f, outputs])
    stub = os.path.join(out, 'stub')  # IPython.display, when IPython is not installed
    os.makedirs(os.path.join(stub, 'IPython'), exist_ok=True)
    with open(os.path.join(stub, 'IPython', '__init__.py'), 'w') as f:
        f.write('')
    with open(os.path.join(stub, 'IPython', 'display.py'), 'w') as f:
        f.write('def display(*a, **k):\n    print(*a)\n')
    env = dict(ENV, MPLBACKEND='Agg')
    try:
        import IPython  # noqa: F401
    except ImportError:
        env['PYTHONPATH'] = stub
    for name in REFERENCE_NOTEBOOKS:
        with open(os.path.join(copy, 'plots', f'{name}.ipynb')) as f:
            nb = json.load(f)
        code = '\n\n'.join(''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code')
        code = '\n'.join(line for line in code.splitlines() if not line.lstrip().startswith(('%', '!')))
        script = os.path.join(copy, 'plots', f'{name}_code.py')
        with open(script, 'w') as f:
            f.write(code)
        before = set(glob.glob(os.path.join(outputs, '*.pdf')))
        p = subprocess.run([PY, script], cwd=os.path.join(copy, 'plots'), capture_output=True, text=True, env=env,
                           timeout=900)
        if p.returncode != 0:
            print(p.stdout[-2000:], p.stderr[-4000:])
            raise Failure(f'the reference notebook {name} failed on perfsweep npy files')
        made = sorted(set(glob.glob(os.path.join(outputs, '*.pdf'))) - before)
        check(made, f'{name}: ran on perfsweep npy files, wrote {[os.path.basename(m) for m in made]}')
    return 0


if __name__ == '__main__':
    cmds = {'cli': cmd_cli, 'helpers': cmd_helpers, 'paraview': cmd_paraview, 'notebooks': cmd_notebooks,
            'reference': cmd_reference}
    try:
        sys.exit(cmds[sys.argv[1]](*sys.argv[2:]))
    except Failure as e:
        print(f'FAIL: {e}')
        sys.exit(1)
