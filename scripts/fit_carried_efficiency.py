#!/usr/bin/python3
"""Fits the factor on a carried kernel calibration's tensor-core efficiencies (scripts/
carry_calibration.py --efficiency-scale) for one GPU to NVIDIA's published runs of chosen containers
and prints the errors of the fit rows and of the held-out ones: the same GPU's published runs of the
other containers and its MLPerf Training results (validation/mlperf/runs.csv), which no fit reads.

  fit_carried_efficiency.py ESTIMATE --gpu B200|GB200 [--fit-containers 25.09,25.11] [--grid 0.7:1.0:0.005]

For each factor of the grid the H100 calibration is carried to the GPU with it (carry_calibration.py,
148 SMs) and a copy of the GPU's calibrated system file points at the result; every row is predicted
by `estimate` as its check maps it (test/python/test_published_blackwell.py for NVIDIA's runs,
scripts/mlperf_first_look.py for MLPerf's). Error: predicted / measured throughput - 1 (tokens/s per
GPU; for MLPerf, measured step / predicted step - 1). The factor kept minimizes the mean absolute log
error over the fit rows (least absolute deviations: a row the table misstates moves it less).
"""
import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
sys.path.insert(0, os.path.join(ROOT, 'test', 'python'))
import mlperf_first_look  # noqa: E402  (MLPerf rows as estimate's flags)
import test_published_blackwell  # noqa: E402  (NVIDIA's Blackwell rows as estimate's flags)

SYSTEMS = {'B200': ('DGX-B200', 'B200-calibrated'), 'GB200': ('DGX-GB200', 'GB200-calibrated')}


def carried(folder, scale, gpu):
    """The H100 calibration carried to the GPU with the factor; a system file that uses it."""
    cal = os.path.join(folder, f'{gpu}_{scale:g}.yaml')
    subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'carry_calibration.py'),
                    os.path.join(ROOT, 'systems', 'calibrations', 'h100_kernels.yaml'), '--sm-count', '148',
                    '--gpu', gpu, '--systems', SYSTEMS[gpu][1], '--efficiency-scale', f'{scale:g}',
                    '--scale-source', 'a trial of fit_carried_efficiency.py', '-o', cal], check=True)
    system = os.path.join(folder, f'{SYSTEMS[gpu][1]}_{scale:g}.yaml')
    with open(os.path.join(ROOT, 'systems', SYSTEMS[gpu][1] + '.yaml')) as f, open(system, 'w') as out:
        for line in f:
            out.write(f'kernels: {cal}\n' if line.startswith('kernels:') else line)
    return system


def predict(args):
    p = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    return json.loads(p.stdout) if p.returncode == 0 else None


def errors(estimate, gpu, system, published, mlperf):
    """{id: (part label, error)} of the published and MLPerf rows with this system file."""
    out = {}
    for r in published:
        args = test_published_blackwell.command(estimate, ROOT, r)
        args[args.index('--system') + 1] = system
        d = predict(args)
        if d:
            out[r['id']] = d['efficiency']['tokens_per_s_per_gpu'] / float(r['tokens_per_s_per_gpu']) - 1
    for r in mlperf:
        args = mlperf_first_look.command(r)
        args[args.index('--system') + 1] = system
        d = predict([estimate, *args])
        if d:
            out[r['id']] = float(r['step_s']) / d['totals']['t'] - 1
    return out


def summary(label, errs):
    if not errs:
        return f'{label}: no rows'
    return (f'{label}: {len(errs)} rows, median |error| {statistics.median(abs(e) for e in errs):.1%}, '
            f'median signed {statistics.median(errs):+.1%}, worst {max(errs, key=abs):+.1%}')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('estimate')
    ap.add_argument('--gpu', required=True, choices=sorted(SYSTEMS))
    ap.add_argument('--fit-containers', default='25.09,25.11')
    ap.add_argument('--grid', default='0.7:1.0:0.005', help='LO:HI:STEP')
    a = ap.parse_args()
    estimate = os.path.abspath(a.estimate)
    lo, hi, step = (float(x) for x in a.grid.split(':'))
    grid = [round(lo + i * step, 6) for i in range(int(round((hi - lo) / step)) + 1)]
    fit_containers = set(a.fit_containers.split(','))
    with open(os.path.join(ROOT, 'test', 'data', 'published', 'nemo_blackwell.csv'), newline='') as f:
        published = [r for r in csv.DictReader(f) if r['system'] == SYSTEMS[a.gpu][0]]
    with open(os.path.join(ROOT, 'validation', 'mlperf', 'runs.csv'), newline='') as f:
        mlperf = [r for r in csv.DictReader(f) if r['expressible'] == 'yes' and r['gpu'] == a.gpu]
    fit_ids = {r['id'] for r in published if r['container'] in fit_containers}
    if not fit_ids:
        sys.exit(f'no published {a.gpu} row of containers {sorted(fit_containers)}')
    held_pub = {r['id'] for r in published} - fit_ids
    held_ml = {r['id'] for r in mlperf}
    with tempfile.TemporaryDirectory() as folder:
        trials = {}
        for scale in grid:
            e = errors(estimate, a.gpu, carried(folder, scale, a.gpu), published, mlperf)
            fit = [e[i] for i in fit_ids if i in e]
            trials[scale] = (sum(abs(math.log1p(x)) for x in fit) / len(fit), e)
        scale = min(grid, key=lambda s: (trials[s][0], s))
        before = errors(estimate, a.gpu, os.path.join(ROOT, 'systems', SYSTEMS[a.gpu][1] + '.yaml'), published,
                        mlperf)
    e = trials[scale][1]
    print(f'{a.gpu}: efficiency scale {scale:g} (fitted on {len(fit_ids)} published rows of containers '
          f'{",".join(sorted(fit_containers))}; mean |log error| {trials[scale][0]:.3f})')
    for label, ids in (('fit: published', fit_ids), ('held out: published, other containers', held_pub),
                       ('held out: MLPerf Training', held_ml)):
        print(summary(f'{label}, the system file as it is', [before[i] for i in ids if i in before]))
        print(summary(f'{label}, fitted', [e[i] for i in ids if i in e]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
