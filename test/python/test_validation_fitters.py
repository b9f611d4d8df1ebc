#!/usr/bin/env python3
"""The named fitters (`validate fit`, docs/validation.md "Validation sets") on the sets they fitted,
run from the source tree as the set files say they were made, written to WORK_DIR:
  host_floor on nanotron's fit part (--kernels systems/calibrations/h100_kernels.yaml) writes
      every file of validation/nanotron/fitted (the system and runtimes nanotron's rows name) byte
      for byte, and fits 1,368 rows (every third by file order);
  kernel_scales on vTrain's fit part (--kernels systems/calibrations/a100_kernels_from_h100.yaml)
      writes systems/calibrations/a100_kernels.yaml byte for byte, from 37 rows;
  carried_efficiency on the Blackwell set's fit part (containers 25.09 and 25.11; --kernels
      systems/calibrations/h100_kernels.yaml), MLPerf held out, fits B200's factor 0.87 on 8 rows and
      GB200's 0.795 on 10 and writes b200_ and gb200_kernels_from_h100.yaml as the shipped files hold
      them but for the comment lines and the source (carry_calibration.py writes those); the held-out
      figures it prints are those of the shipped files (the Blackwell set's held-out rows 4.26% median
      |error|, MLPerf 5.36%, its rows with FP8 parameters as configured).
Either differing means the shipped files are no longer what the fit on today's model gives.

usage: test_validation_fitters.py VALIDATE SOURCE_DIR WORK_DIR
"""
import filecmp
import os
import shutil
import subprocess
import sys

FAILURES = []


def check(ok, what):
    print(('ok    ' if ok else 'FAIL  ') + what)
    if not ok:
        FAILURES.append(what)


def fit(validate, source, *args):
    p = subprocess.run([validate, '-q', 'fit', *args], capture_output=True, text=True, cwd=source)
    check(p.returncode == 0, f'validate fit {" ".join(args[:3])}: exit {p.returncode} {p.stderr.strip()[-300:]}')
    print(p.stdout)
    return p.stdout


def files_under(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def main():
    validate, source, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, 'nanotron')
    text = fit(validate, source, 'host_floor', '--sets', 'nanotron', '--kernels', 'systems/calibrations/h100_kernels.yaml',
               '-o', out)
    check(': 1368 fit rows' in text, 'host_floor: 1368 fit rows')
    shipped = os.path.join(source, 'validation', 'nanotron', 'fitted')
    check(files_under(out) == files_under(shipped), f'host_floor writes the files of fitted/: {files_under(out)}')
    for f in files_under(shipped):
        check(os.path.exists(os.path.join(out, f)) and filecmp.cmp(os.path.join(out, f), os.path.join(shipped, f), shallow=False),
              f'host_floor: {f} byte for byte')
    out = os.path.join(work, 'a100_kernels.yaml')
    text = fit(validate, source, 'kernel_scales', '--sets', 'vtrain', '--kernels',
               'systems/calibrations/a100_kernels_from_h100.yaml', '-o', out)
    check(': 37 fit rows' in text, 'kernel_scales: 37 fit rows')
    check(filecmp.cmp(out, os.path.join(source, 'systems', 'calibrations', 'a100_kernels.yaml'), shallow=False),
          'kernel_scales: systems/calibrations/a100_kernels.yaml byte for byte')
    out = os.path.join(work, 'carried')
    text = fit(validate, source, 'carried_efficiency', '--sets', 'nvidia_blackwell', '--held-out', 'mlperf', '--kernels',
               'systems/calibrations/h100_kernels.yaml', '-o', out)
    check(': 22 fit rows' in text, 'carried_efficiency: 22 fit rows')
    check('GB200-calibrated tensor-core efficiencies x 0.795 (10 fit rows' in text, 'carried_efficiency: GB200 x 0.795')
    check('B200-calibrated tensor-core efficiencies x 0.87 (8 fit rows' in text, 'carried_efficiency: B200 x 0.87')
    check('GB300-calibrated tensor-core efficiencies x 1 (4 fit rows' in text, 'carried_efficiency: GB300 x 1')
    check(any(line.split()[:2] == ['nvidia_blackwell', 'held-out'] and line.split()[4] == '4.26%'
              for line in text.splitlines()), 'carried_efficiency: held-out Blackwell rows 4.26% median |error|')
    check(any(line.split()[:2] == ['mlperf', 'held-out'] and line.split()[4] == '5.36%' for line in text.splitlines()),
          'carried_efficiency: MLPerf held out 5.36% median |error|')

    def values(path):
        with open(path) as f:
            return [line for line in f if not line.startswith('#') and not line.startswith('source:')]
    for name in ('b200_kernels_from_h100.yaml', 'gb200_kernels_from_h100.yaml', 'gb300_kernels_from_h100.yaml'):
        written = os.path.join(out, name)
        check(os.path.exists(written) and values(written) == values(os.path.join(source, 'systems', 'calibrations', name)),
              f'carried_efficiency: {name} as shipped but for comments and source')
    if FAILURES:
        sys.exit(f'{len(FAILURES)} check(s) failed')


if __name__ == '__main__':
    main()
