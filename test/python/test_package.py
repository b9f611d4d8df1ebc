#!/usr/bin/env python3
"""`pip install .` of the perfsweep package into a fresh venv (Debian's h5py, numpy and pandas
through --system-site-packages, no index, no build isolation), then the installed package and its
console script on a sweep's HDF5 file, checked against the file read with h5py.

    test_package.py REPO WORK FILE.h5
"""
import os
import shutil
import subprocess
import sys

import h5py


def run(*cmd, **kw):
    print('+', ' '.join(cmd), flush=True)
    return subprocess.run(cmd, check=True, text=True, **kw)


def main(repo, work, h5):
    shutil.rmtree(work, ignore_errors=True)
    src = os.path.join(work, 'src')
    os.makedirs(src)
    # A copy, so the build's scratch files (build/, *.egg-info) stay out of the checkout.
    shutil.copy(os.path.join(repo, 'pyproject.toml'), src)
    shutil.copytree(os.path.join(repo, 'python'), os.path.join(src, 'python'),
                    ignore=shutil.ignore_patterns('*.egg-info', '__pycache__'))
    venv = os.path.join(work, 'venv')
    run('/usr/bin/python3', '-m', 'venv', '--system-site-packages', venv)
    py = os.path.join(venv, 'bin', 'python')
    run(py, '-m', 'pip', 'install', '--no-build-isolation', '--no-index', src)

    # Rows per group and each group's best throughput, read independently of the package.
    expected_rows, expected_best = 0, {}
    with h5py.File(h5, 'r') as f:
        for name, g in f.items():
            if isinstance(g, h5py.Group) and 'top' in g:
                expected_rows += len(g['top/rank'])
                if len(g['top/rank']):  # a system where nothing fits has an empty table
                    expected_best[name] = float(max(g['top/throughput'][()]))
    probe = (
        'import json, sys, perfsweep\n'
        'df = perfsweep.open(sys.argv[1])\n'
        'print(json.dumps({"file": perfsweep.__file__, "rows": len(df),\n'
        '                  "best": {s: float(v) for s, v in df.groupby("system").throughput.max().items()}}))\n')
    out = run(py, '-c', probe, h5, capture_output=True, cwd=work).stdout
    import json
    got = json.loads(out)
    failures = []
    if not got['file'].startswith(venv):
        failures.append(f"perfsweep imported from {got['file']}, not the venv")
    if got['rows'] != expected_rows:
        failures.append(f"{got['rows']} rows, the file has {expected_rows}")
    if got['best'] != expected_best:
        failures.append(f"best throughputs {got['best']} != {expected_best}")
    script = os.path.join(venv, 'bin', 'perfsweep-h5')
    with open(script) as f:
        shebang = f.readline().strip()
    if shebang != '#!' + py:
        failures.append(f'console script runs {shebang}, not the venv\'s python')
    summary = run(script, 'summary', h5, capture_output=True).stdout
    if not all(name in summary for name in expected_best):
        failures.append(f'summary names not every system:\n{summary}')
    for msg in failures:
        print('FAIL', msg)
    print(f'{len(expected_best)} systems, {expected_rows} rows' if not failures else f'{len(failures)} failure(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
