#!/usr/bin/python3
"""A first look at the MLPerf set: `estimate` on each expressible row of validation/mlperf/runs.csv,
as a user would run it (the shipped calibrated system of the row's GPU, its default runtime, the
published layout, precision and sequence), and the predicted step time against the measured one.

  mlperf_first_look.py RUNS_CSV ESTIMATE -o FIRST_LOOK_CSV

The mapping of a row to estimate's flags:
  --system <gpu>-calibrated (H100, H200, B200, GB200; the system file's runtime, nemo);
  --model perfsweep_model, --seq-len seq_len, --precision precision;
  --tp --pp --cp --dp --mbs --global-batch-size --interleave (vp) as the row;
  --sp off only where tp > 1 and the config turned sequence parallelism off;
  --recompute selective|full where the config asks for it;
  --nvs nvlink_domain on GB200 (the GPUs of one NVL72 rack a run's replicas share: 64 when the
    config places each 16-node segment in a rack, else 72);
  uneven pipeline stages where pp does not divide the model's depth: Megatron-Core's
    account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split (the
    ASYM_PP_EMBED and ASYM_PP_LOSS the Llama 3.1 405B configs set) count the embedding and the
    loss as one block each, so with (depth + 2) divisible by pp the first and last stages hold
    (depth + 2) / pp - 1 blocks (126 blocks, pp 8: 15, six stages of 16, 15); else `auto`.
The step time is the JSON's totals.t; rel_err = predicted / measured - 1.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

SYSTEMS = {'H100': 'H100-calibrated', 'H200': 'H200-calibrated', 'B200': 'B200-calibrated',
           'GB200': 'GB200-calibrated', 'A100': 'A100-calibrated'}
DEPTH = {'gpt3': 96, 'llama3_405b': 126, 'llama3_8b': 32}
COLUMNS = ['id', 'gpu', 'benchmark', 'gpus', 'precision', 'measured_step_s', 'predicted_step_s', 'rel_err',
           'fits', 'mem_gb', 'mem_limit_gb', 'note', 'command']


def command(row):
    tp, pp, cp, vp = int(row['tp']), int(row['pp']), int(row['cp']), int(row['vp'] or 1)
    args = ['-q', '--json', '--system', SYSTEMS[row['gpu']], '--model', row['perfsweep_model'],
            '--seq-len', row['seq_len'], '--precision', row['precision'] or 'bf16',
            '--tp', str(tp), '--pp', str(pp), '--cp', str(cp), '--dp', row['dp'], '--mbs', row['mbs'],
            '--global-batch-size', row['gbs'], '--interleave', str(vp)]
    if tp > 1 and row['sequence_parallel'] == 'false':
        args += ['--sp', 'off']
    rec = row['activation_recompute']
    if rec.startswith('selective'):
        args += ['--recompute', 'selective']
    elif rec.startswith('full'):
        args += ['--recompute', 'full']
    if row['gpu'] == 'GB200' and row['nvlink_domain']:
        args += ['--nvs', row['nvlink_domain']]
    depth = DEPTH.get(row['perfsweep_model'])
    if depth and depth % pp:
        if (depth + 2) % pp == 0:
            edge = (depth + 2) // pp - 1
            args += ['--first-stage-blocks', str(edge), '--last-stage-blocks', str(edge)]
        else:
            args += ['--first-stage-blocks', 'auto', '--last-stage-blocks', 'auto']
    return args


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('runs')
    ap.add_argument('estimate')
    ap.add_argument('-o', '--output', required=True)
    args = ap.parse_args()
    with open(args.runs, newline='') as f:
        rows = [r for r in csv.DictReader(f) if r['expressible'] == 'yes']
    out = []
    for r in rows:
        flags = command(r)
        p = subprocess.run([args.estimate, *flags], capture_output=True, text=True)
        measured = float(r['step_s'])
        rec = {'id': r['id'], 'gpu': r['gpu'], 'benchmark': r['benchmark'], 'gpus': r['gpus'],
               'precision': r['precision'], 'measured_step_s': r['step_s'], 'predicted_step_s': '',
               'rel_err': '', 'fits': '', 'mem_gb': '', 'mem_limit_gb': '', 'note': '',
               'command': ' '.join(['estimate', *flags])}
        if p.returncode != 0:
            rec['note'] = 'estimate refused: ' + ' '.join(p.stderr.split())[:300]
        else:
            tot = json.loads(p.stdout)['totals']
            rec.update(predicted_step_s=f'{tot["t"]:.6g}', rel_err=f'{tot["t"] / measured - 1:.4f}',
                       fits='yes' if tot.get('fits') else 'no', mem_gb=f'{tot["mem"]:.1f}',
                       mem_limit_gb=f'{tot["mem_limit"]:.1f}')
            if not tot.get('fits'):
                rec['note'] = 'predicted not to fit, although the run trained'
        out.append(rec)
    out.sort(key=lambda x: x['id'])
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator='\n')
        w.writeheader()
        w.writerows(out)
    print(summary_table(out))
    return 0


def summary_table(out):
    """The errors by GPU and benchmark, by GPU, by benchmark and over all rows (markdown)."""
    import statistics
    rows = [r for r in out if r['rel_err']]
    gpus = [g for g in SYSTEMS if any(r['gpu'] == g for r in rows)]
    benchmarks = sorted({r['benchmark'] for r in rows})
    lines = ['| GPU | benchmark | rows | median abs err | signed median | range |',
             '| --- | --- | --- | --- | --- | --- |']

    def line(gpu, bench):
        e = [float(r['rel_err']) for r in rows
             if gpu in ('all', r['gpu']) and bench in ('all', r['benchmark'])]
        if not e:
            return
        rng = f'{min(e):+.1%}' if len(e) == 1 else f'{min(e):+.1%} .. {max(e):+.1%}'
        lines.append(f'| {gpu} | {bench} | {len(e)} | {statistics.median(abs(x) for x in e):.1%} | '
                     f'{statistics.median(e):+.1%} | {rng} |')
    for g in gpus:
        for b in benchmarks:
            line(g, b)
    for g in gpus:
        line(g, 'all')
    for b in benchmarks:
        line('all', b)
    line('all', 'all')
    return '\n'.join(lines)


if __name__ == '__main__':
    sys.exit(main())
