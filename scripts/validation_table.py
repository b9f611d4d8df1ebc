#!/usr/bin/env python3
"""A validation set's rows as Markdown, from the CSV `validate runs DIR -o ROWS.csv` writes: one
line per run with its measured value and, per variant, the prediction, the signed error and
whether it fits (else its memory over what the runtime can allocate); then per variant the count,
median |error|, median signed error and worst (the summary `validate runs` prints on stdout has
them by part, GPU, precision and scale too).

usage: validation_table.py ROWS.csv [--variants default,megatron] [--columns gpus,tp,pp]
  --columns: columns of the rows CSV (the set's summarize_by ones) shown after the id
"""
import argparse
import csv
import statistics
import sys


def shown(v):
    return f'{v:.0f}' if abs(v) >= 100 else f'{v:.4g}'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('rows')
    ap.add_argument('--variants', help='the variants shown, in order (default: every one, as in the file)')
    ap.add_argument('--columns', default='', help='columns shown after the id')
    args = ap.parse_args()
    with open(args.rows, newline='') as f:
        rows = list(csv.DictReader(f))
    variants = args.variants.split(',') if args.variants else list(dict.fromkeys(r['variant'] for r in rows))
    columns = [c for c in args.columns.split(',') if c]
    by = {(r['variant'], r['id']): r for r in rows}
    ids = list(dict.fromkeys(r['id'] for r in rows if r['variant'] == variants[0]))
    head = ['run', *columns, 'measured']
    for v in variants:
        head += [f'{v}: predicted', 'error', 'fits']
    print('| ' + ' | '.join(head) + ' |')
    print('|' + '---|' * len(head))
    for i in ids:
        first = by[(variants[0], i)]
        cells = [f'`{i}`', *(first.get(c, '') for c in columns), shown(float(first['measured'])) if first['measured'] else '']
        for v in variants:
            r = by.get((v, i))
            if r is None or r['predicted'] == '':
                cells += ['', '', '']
                continue
            err = f'{float(r["rel_err"]):+.1%}' if r['rel_err'] else ''
            fits = 'yes' if r['fits'] == 'yes' else f'no ({float(r["memory_fraction"]):.0%})'
            cells += [shown(float(r['predicted'])), err, fits]
        print('| ' + ' | '.join(cells) + ' |')
    print()
    print('| variant | rows | median \\|error\\| | median signed | worst |')
    print('|---|---|---|---|---|')
    for v in variants:
        e = [float(r['rel_err']) for r in rows if r['variant'] == v and r['rel_err']]
        if not e:
            continue
        print(f'| {v} | {len(e)} | {statistics.median(abs(x) for x in e):.1%} | {statistics.median(e):+.1%} '
              f'| {max(e, key=abs):+.1%} |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
