#!/usr/bin/python3
"""The `configs` command against the reference and against `estimate`.

  test_configs.py CONFIGS_BIN ESTIMATE_BIN PAPER_DIR

- Every top-10 configuration the reference published for a few (strategy, model, system, GPU
  count) cases (PAPER_DIR, test/data/paper), asked for with its exact degrees and NVLink
  placement, comes back with the reference's throughput, memory and every stats value, bit for bit
  (the CSV prints %.17g, the reference's JSON the shortest round-trip repr: both read back exactly).
- With no degrees given, configs' fastest fitting row at each GPU count of a few published
  searches (including 2d optima with mbs 8, 16 and 32) has the reference's best throughput,
  memory and stats, bit for bit: its default space is the search's.
- A row of configs' CSV equals `estimate --json` totals for the same configuration, bit for bit.
- The notebook's TP-fixed PP sweep returns its configurations in the order asked for, DP derived.
"""
import csv
import io
import json
import os
import subprocess
import sys

# (strategy, model, system) whose every published GPU count the default (search) space must match.
SEARCHES = [('1d', 'gpt3_1T', 'B200-NVS8'), ('2d', 'gpt3_1T', 'B200-NVS64'), ('2d', 'gpt3_1T', 'H200-NVS64'),
            ('2d-seqp', 'vit_era5', 'A100-NVS4')]
CASES = [('1d', 'gpt3_1T', 'B200-NVS8', 1024), ('2d', 'gpt3_1T', 'A100-NVS4', 4096),
         ('2d-seqp', 'vit_era5', 'H200-NVS64', 512)]
FAILURES = []


TALLY = {'compared': 0, 'largest': 0.0}


def same(a, b):
    """Equal doubles; a difference is tallied (largest relative difference, for the closing line)."""
    TALLY['compared'] += 1
    if a == b:
        return True
    TALLY['largest'] = max(TALLY['largest'], abs(a - b) / max(abs(a), abs(b)))
    return False


def run(cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f'{" ".join(map(str, cmd))} exited {p.returncode}: {p.stderr}')
    return p.stdout


def rows_of(text):
    return list(csv.DictReader(io.StringIO(text)))


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print('FAIL', what)


def paper_cases(configs, paper_dir):
    compared = n_rows = 0
    for strat, model, system, n in CASES:
        golden = json.load(open(os.path.join(paper_dir, f'{strat}_{model}_{system}.json')))
        gpu, nvs = system.split('-NVS')
        top = golden['top'][golden['n_gpus'].index(n)]
        for g in top:
            c, st = g['config'], g['stats']
            cmd = [configs, '--model', model, '--system', gpu, '--nvs', nvs, '--strat', strat, '--n-gpus', n,
                   '--pp', c['pp'], '--dp', c['dp'], '--mbs', c['mbs'], '--nv-dp', st['nv_dp'], '--nv-pp', st['nv_pp'],
                   '--csv']
            if strat == '1d':
                cmd += ['--tp', c['tp'], '--nv-tp', st['nv_tp']]
            else:
                cmd += ['--tp1', c['tp1'], '--tp2', c['tp2'], '--nv-tp1', st['nv_tp1'], '--nv-tp2', st['nv_tp2']]
            if strat == '2d':
                cmd += ['--nb', c['nb']]
            rows = rows_of(run(cmd))
            n_rows += 1
            check(len(rows) == 1, f'{system} {c}: {len(rows)} rows')
            r = rows[0]
            check(same(float(r['throughput']), g['throughput']), f'{system} {c}: throughput')
            for k, v in st.items():
                key = 'nv_tp1' if k == 'nv_tp' else k
                compared += 1
                check(same(float(r[key]), v), f'{system} {c}: {k} {r[key]} != {v}')
    print(f'reference: {n_rows} configurations of {len(CASES)} cases, {compared} stats values compared')


def search_space(configs, paper_dir):
    n_counts = n_same = 0
    for strat, model, system in SEARCHES:
        golden = json.load(open(os.path.join(paper_dir, f'{strat}_{model}_{system}.json')))
        gpu, nvs = system.split('-NVS')
        for n, top in zip(golden['n_gpus'], golden['top']):
            if not top:
                continue
            rows = rows_of(run([configs, '--model', model, '--system', gpu, '--nvs', nvs, '--strat', strat,
                                '--n-gpus', n, '--global-batch-size', golden['global_batch_size'], '--top', 1, '--csv']))
            best, g = rows[0], top[0]
            what = f'{strat} {model} {system} {n} GPUs, best {g["config"]}'
            n_counts += 1
            check(best['fits'] == '1', f'{what}: fits')
            check(same(float(best['throughput']), g['throughput']),
                  f'{what}: throughput {best["throughput"]} != {g["throughput"]}')
            check(same(float(best['mem']), g['mem']), f'{what}: mem {best["mem"]} != {g["mem"]}')
            same_config = all(int(best[k]) == v for k, v in g['config'].items())
            n_same += same_config
            if same_config:  # equal throughputs of other configurations are ties the search broke its own way
                for k, v in g['stats'].items():
                    key = 'nv_tp1' if k == 'nv_tp' else k
                    check(same(float(best[key]), v), f'{what}: {k} {best[key]} != {v}')
    print(f'search space: best of {n_counts} GPU counts of {len(SEARCHES)} published searches '
          f'({n_same} the same configuration, stats compared)')


def against_estimate(configs, estimate):
    args = ['--model', 'gpt3_1T', '--system', 'B200', '--nvs', '8', '--strat', '1d']
    rows = rows_of(run([configs, *args, '--n-gpus', 1024, '--tp', 4, '--pp', 32, '--mbs', 2, '--csv']))
    check(len(rows) == 1, 'one row for one configuration')
    r = rows[0]
    est = json.loads(run([estimate, *args, '--tp', 4, '--pp', 32, '--dp', r['dp'], '--mbs', 2, '--nv-tp', r['nv_tp1'],
                          '--nv-dp', r['nv_dp'], '--nv-pp', r['nv_pp'], '--json']))
    totals = est['totals']
    n = 0
    for k, v in totals.items():
        if k in r and isinstance(v, (int, float)) and not isinstance(v, bool):
            n += 1
            check(float(r[k]) == float(v), f'estimate {k}: {r[k]} != {v!r}')
    check(float(r['throughput']) == est['throughput'], 'estimate throughput')
    check(n >= 19, f'only {n} totals compared')
    print(f'estimate: {n} totals keys equal')


def notebook_sweep(configs):
    rows = rows_of(run([configs, '--n-gpus', 16384, '--system', 'B200', '--nvs', 8, '--tp', 8, '--pp', '1:128',
                        '--csv']))
    check([int(r['pp']) for r in rows] == [1, 2, 4, 8, 16, 32, 64, 128], 'pp order')
    check(all(int(r['dp']) * 8 * int(r['pp']) == 16384 for r in rows), 'dp derived')
    check(any(r['fits'] == '0' for r in rows) and any(r['fits'] == '1' for r in rows), 'fits column')
    print(f'notebook sweep: {len(rows)} rows')


if __name__ == '__main__':
    configs_bin, estimate_bin, paper = sys.argv[1:4]
    paper_cases(configs_bin, paper)
    search_space(configs_bin, paper)
    against_estimate(configs_bin, estimate_bin)
    notebook_sweep(configs_bin)
    print(f'reference values compared: {TALLY["compared"]}, largest relative difference {TALLY["largest"]:.3g}')
    print('FAILED' if FAILURES else 'ok', len(FAILURES))
    sys.exit(1 if FAILURES else 0)
