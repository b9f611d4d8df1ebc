#!/usr/bin/env python3
"""`pip install .` of the perfsweep package into a fresh venv (Debian's h5py, numpy and pandas
through --system-site-packages, no index, no build isolation), then the installed package and its
console script on a sweep's HDF5 file, checked against the file read with h5py; and the in-process
API (perfsweep.estimate, perfsweep.search) against the estimate and configs tools' own output.

    test_package.py REPO WORK FILE.h5 BIN
"""
import os
import shutil
import subprocess
import sys

import h5py


def run(*cmd, **kw):
    print('+', ' '.join(cmd), flush=True)
    return subprocess.run(cmd, check=True, text=True, **kw)


# perfsweep.estimate and perfsweep.search in the venv, and the tools' --json and --csv, each
# parsed the same way: equal to the last bit.
API_PROBE = r'''
import io, json, subprocess, sys
import pandas as pd
import perfsweep
bin_dir = sys.argv[1]
flags = dict(model="llama3_70b", system="H100", tp=8, pp=4, dp=2, global_batch_size=64, zero=1)
words = perfsweep.api.flags_of(**flags)
got = perfsweep.estimate(**flags)
want = json.loads(subprocess.run([bin_dir + "/estimate", *words, "--json", "-q"], capture_output=True, text=True,
                                 check=True).stdout)
search = dict(model="llama3_70b", system="H100", n_gpus=64, global_batch_size=64, top=5)
rows = perfsweep.search(**search)
csv = subprocess.run([bin_dir + "/configs", *perfsweep.api.flags_of(**search), "--csv", "-q"], capture_output=True,
                     text=True, check=True).stdout
want_rows = pd.read_csv(io.StringIO(csv), float_precision="round_trip")
# Every failure, after good calls too, is a PerfsweepError with the tool's message; the tools run
# again and again in one process (one logger per run); help and version are the tools' text.
failures = []
for tool, bad, expected in [(perfsweep.estimate, dict(model="llama3_70b", tp=3), "tp=3 does not divide the 64 heads"),
                            (perfsweep.estimate, dict(model="nope"), "unknown model 'nope'"),
                            (perfsweep.search, dict(model="llama3_70b", n_gpus=64, tp=3), "--tp=3 does not divide"),
                            (perfsweep.estimate, dict(model="llama3_70b", tp=3), "tp=3 does not divide the 64 heads")]:
    try:
        tool(**bad)
        failures.append(f"{bad}: accepted")
    except perfsweep.PerfsweepError as e:
        if e.code != 2 or expected not in e.message or expected not in str(e):
            failures.append(f"{bad}: code {e.code}, message {e.message!r}")
    except Exception as e:
        failures.append(f"{bad}: {type(e).__name__}: {e}")
if perfsweep.estimate(**flags) != want:
    failures.append("a later estimate differs")
version = perfsweep.estimate(version=True)
if not version.startswith("perfsweep ") or perfsweep.search(version=True) != version:
    failures.append(f"version: {version!r}")
if "--global-batch-size" not in perfsweep.estimate(help=True):
    failures.append("help")
print(json.dumps({"estimate_equal": got == want, "t": got["totals"]["t"], "rows": len(rows),
                  "search_equal": rows.equals(want_rows), "failures": failures}))
'''


def main(repo, work, h5, bin_dir):
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
    # the plot commands as console scripts of the venv: a figure from the sweep's file
    plot = os.path.join(venv, 'bin', 'perfsweep-plot-throughput-per-gpu')
    with open(plot) as f:
        if f.readline().strip() != '#!' + py:
            failures.append('perfsweep-plot-throughput-per-gpu does not run the venv\'s python')
    run(plot, h5, '--out', os.path.join(work, 'throughput'), capture_output=True, cwd=work)
    if not os.path.getsize(os.path.join(work, 'throughput.png')):
        failures.append('perfsweep-plot-throughput-per-gpu wrote an empty PNG')
    if not all(name in summary for name in expected_best):
        failures.append(f'summary names not every system:\n{summary}')
    api = json.loads(run(py, '-c', API_PROBE, bin_dir, capture_output=True, cwd=work).stdout)
    print('in-process API:', api)
    if not api['estimate_equal']:
        failures.append('perfsweep.estimate differs from estimate --json')
    if not api['search_equal'] or api['rows'] != 5:
        failures.append(f'perfsweep.search differs from configs --csv ({api["rows"]} rows)')
    failures += [f'in-process API: {f}' for f in api['failures']]
    for msg in failures:
        print('FAIL', msg)
    print(f'{len(expected_best)} systems, {expected_rows} rows' if not failures else f'{len(failures)} failure(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
