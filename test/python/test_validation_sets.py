#!/usr/bin/env python3
"""Every validation set (validation/NAME, docs/validation.md "Validation sets") predicted by
`validate runs`, and each row's `command` (the estimate command the rows CSV gives for it) run as a
user would type it: its --json totals.t must be the row's predicted_step_s bit for bit (both print
the double with 17 significant digits), and a row the model refused must be refused by estimate
too. Sets of more than 500 rows are sampled: every 8th row by file order.

usage: test_validation_sets.py VALIDATE ESTIMATE SOURCE_DIR WORK_DIR
"""
import concurrent.futures
import csv
import json
import os
import subprocess
import sys

FAILURES = []


def check(ok, what):
    print(('ok    ' if ok else 'FAIL  ') + what)
    if not ok:
        FAILURES.append(what)


def run_command(estimate, source, row):
    args = row['command'].split()
    assert args[0] == 'estimate', row
    p = subprocess.run([estimate, *args[1:], '--json', '-q'], capture_output=True, text=True, cwd=source)
    if p.returncode != 0:
        return row, p.returncode, p.stderr.strip()
    return row, 0, json.loads(p.stdout)['totals']['t']


def main():
    validate, estimate, source, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    sets = sorted(d for d in os.listdir(os.path.join(source, 'validation'))
                  if os.path.isfile(os.path.join(source, 'validation', d, 'set.yaml')))
    check(len(sets) >= 8, f'{len(sets)} sets in validation/: {", ".join(sets)}')
    for name in sets:
        out = os.path.join(work, name + '.csv')
        p = subprocess.run([validate, '-q', 'runs', os.path.join('validation', name), '-o', out],
                           capture_output=True, text=True, cwd=source)
        check(p.returncode == 0, f'{name}: validate runs exits 0 ({p.stderr.strip()[-300:]})')
        if p.returncode != 0:
            continue
        with open(out, newline='') as f:
            rows = [r for r in csv.DictReader(f) if r['command']]
        if len(rows) > 500:
            rows = rows[::8]
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda r: run_command(estimate, source, r), rows))
        same = refused = 0
        for row, rc, value in results:
            if row['predicted_step_s'] == '':
                refused += rc == 2
                if rc != 2:
                    print(f'  {name} {row["variant"]} {row["id"]}: not predicted by validate, estimate exit {rc}')
            elif rc == 0 and value == float(row['predicted_step_s']):
                same += 1
            else:
                print(f'  {name} {row["variant"]} {row["id"]}: estimate {value!r}, validate {row["predicted_step_s"]}')
        predicted = sum(1 for r in rows if r['predicted_step_s'] != '')
        check(same == predicted, f'{name}: {same} of {predicted} commands repeat the prediction bit for bit')
        check(refused == len(rows) - predicted, f'{name}: {refused} of {len(rows) - predicted} rows refused by both')
    if FAILURES:
        sys.exit(f'{len(FAILURES)} check(s) failed')


if __name__ == '__main__':
    main()
