#!/usr/bin/env python3
"""Lists of options and strategies (`configs`, `sweep`) against separate single-valued runs, and
units in system files against the bare numbers they stand for.

  test_lists.py BIN_DIR SOURCE_DIR

Every expected value comes from another run of the tools (one value per option, one strategy per
run, a system file without units) or from the unit's definition, never from a copy of an output.
"""
import csv
import io
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile

BIN, SOURCE = sys.argv[1], sys.argv[2]
FAILED = []


def check(ok, what):
    print(('ok    ' if ok else 'FAIL  ') + what, flush=True)
    if not ok:
        FAILED.append(what)


def run(tool, *args, expect=0):
    r = subprocess.run([os.path.join(BIN, tool), *map(str, args)], capture_output=True, text=True)
    if r.returncode != expect:
        raise SystemExit(f'{tool} {" ".join(map(str, args))}: exit {r.returncode}, expected {expect}\n{r.stderr}')
    return r


def configs_csv(*args):
    return list(csv.DictReader(io.StringIO(run('configs', '-q', '--csv', *args).stdout)))


# Columns that name a row (configuration and options) and those that are its results.
KEY = ['strategy', 'dp', 'tp1', 'tp2', 'pp', 'mbs', 'nb', 'nv_tp1', 'nv_tp2', 'nv_dp', 'nv_pp', 'recompute', 'sp',
       'zero', 'interleave', 'layout', 'ep', 'precision', 'schedule', 'attention']
RESULTS = ['throughput', 'fits', 't', 'mem', 't_comp', 't_tp_comm', 't_dp_comm', 't_pp_comm', 't_bubble', 'mfu']


def by_key(rows):
    out = {tuple(r[k] for k in KEY): tuple(r[k] for k in RESULTS) for r in rows}
    assert len(out) == len(rows), 'two rows of one configuration'
    return out


# 1. configs with lists: the rows of the separate single-valued runs, each with its options.
base = ['--model', 'llama3_8b', '--system', 'H100', '--n-gpus', '64', '--tp', '2,4', '--pp', '1,2']
lists = {'--recompute': ['none', 'full'], '--zero': ['0', '1'], '--attention': ['flash', 'unfused'],
         '--layout': ['reference', 'megatron'], '--schedule': ['1f1b', 'zb-h1']}
together = by_key(configs_csv(*base, *itertools.chain(*[(flag, ','.join(v)) for flag, v in lists.items()])))
separate = {}
for values in itertools.product(*lists.values()):
    separate.update(by_key(configs_csv(*base, *itertools.chain(*zip(lists.keys(), values)))))
runs = len(list(itertools.product(*lists.values())))
check(len(together) > 64 and together == separate,
      f'configs with lists: {len(together)} rows, those of the {runs} single-valued runs ({len(separate)} rows)')

# 1b. The end stages' blocks as lists: every pair of the two lists, the rows of the separate runs.
stages = ['--model', 'llama3_8b', '--system', 'H100-calibrated', '--n-gpus', '64', '--tp', '8', '--pp', '4',
          '--recompute', 'none,full']
STAGE_KEY = KEY + ['first_stage_blocks', 'last_stage_blocks']
staged = {tuple(r[k] for k in STAGE_KEY): tuple(r[k] for k in RESULTS)
          for r in configs_csv(*stages, '--first-stage-blocks', '6,8', '--last-stage-blocks', '8,6')}
apart = {}
for first, last in itertools.product(('6', '8'), ('8', '6')):
    apart.update({tuple(r[k] for k in STAGE_KEY): tuple(r[k] for k in RESULTS)
                  for r in configs_csv(*stages, '--first-stage-blocks', first, '--last-stage-blocks', last)})
pairs = {(k[-2], k[-1]) for k in staged}
check(staged == apart and pairs == {('6', '8'), ('6', '6'), ('8', '8'), ('8', '6')},
      f'configs --first-stage-blocks 6,8 --last-stage-blocks 8,6: {len(staged)} rows, the four single-pair runs\' '
      f'({len(apart)})')
r = run('configs', *stages, '--first-stage-blocks', '6,6', expect=2)
check('--first-stage-blocks lists 6 twice' in r.stderr, 'configs --first-stage-blocks 6,6: refused (exit 2)')
r = run('estimate', '--model', 'llama3_8b', '--system', 'H100-calibrated', '--tp', '8', '--pp', '4', '--dp', '2',
        '--first-stage-blocks', '6,8', expect=2)
check('--first-stage-blocks must be an integer' in r.stderr, 'estimate --first-stage-blocks 6,8: one value only (exit 2)')

# 1c. A sweep searching offload keeps its totals in top/: the host link's exposed transfers, the
# CPU optimizer and the host memory, with units; rows that offload the optimizer use host memory
# and the CPU, those that do not use neither; a sweep without --offload has no such columns.
with tempfile.TemporaryDirectory() as work:
    import h5py
    off = os.path.join(work, 'off.h5')
    run('sweep', '--model', 'llama3_70b', '--system', 'H100', '--n-gpus', '8,64', '--recompute', 'full',
        '--offload', 'none,optimizer', '--top-n', '20', '-q', '-o', off)
    plain = os.path.join(work, 'plain.h5')
    run('sweep', '--model', 'llama3_70b', '--system', 'H100', '--n-gpus', '8,64', '--recompute', 'full', '-q',
        '-o', plain)
    with h5py.File(off, 'r') as f, h5py.File(plain, 'r') as g:
        top = f['H100-NVS8']['top']
        units = {k: top[k].attrs.get('units', b'').decode() for k in ('t_offload', 't_host_optimizer', 'host_mem')}
        kind = top['offload'].asstr()[()]
        host, cpu = top['host_mem'][()], top['t_host_optimizer'][()]
        check(units == {'t_offload': 's', 't_host_optimizer': 's', 'host_mem': 'GB'} and (kind == 'optimizer').any() and
              (kind == 'none').any() and ((host > 0) & (cpu > 0) == (kind == 'optimizer')).all(),
              f'sweep --offload none,optimizer: top/ offload totals with units {units}, host memory and the CPU '
              f'optimizer on the {int((kind == "optimizer").sum())} rows that offload it only')
        check(not any(k in g['H100-NVS8']['top'] for k in units), 'a sweep without --offload: no offload columns')
    # --offload-percent: shares of the optimizer on the host, tried where the optimizer is offloaded
    # only (elsewhere the list's first value)
    part = os.path.join(work, 'part.h5')
    run('sweep', '--model', 'llama3_70b', '--system', 'H100', '--n-gpus', '8,64', '--recompute', 'full',
        '--offload', 'none,optimizer', '--offload-percent', '50,100', '--top-n', '50', '-q', '-o', part)
    with h5py.File(part, 'r') as f:
        top = f['H100-NVS8']['top']
        kind, percent, host = top['offload'].asstr()[()], top['offload_percent'][()], top['host_mem'][()]
        optimizer = kind == 'optimizer'
        check(set(percent[~optimizer].tolist()) <= {50} and set(percent[optimizer].tolist()) == {50, 100},
              f'sweep --offload-percent 50,100: the shares on rows offloading the optimizer '
              f'({sorted(set(percent[optimizer].tolist()))}), the first elsewhere')
        check((host[optimizer & (percent == 50)] > 0).all(), 'a half-offloaded optimizer uses host memory')
    # --rank-order: both orders searched where they differ (pp > 1 and dp > 1), the first listed
    # elsewhere; each named column holds names and says the codes older files held
    orders = os.path.join(work, 'orders.h5')
    run('sweep', '--model', 'llama3_70b', '--system', 'H100-llama3-cluster', '--n-gpus', '64:1024',
        '--global-batch-size', '512', '--zero', '1,2', '--rank-order', 'tp-cp-ep-dp-pp,tp-cp-ep-pp-dp', '-q',
        '-o', orders)
    with h5py.File(orders, 'r') as f:
        top = f['H100-llama3-cluster-NVS8']['top']
        order, pp, dp = top['rank_order'].asstr()[()], top['pp'][()], top['dp'][()]
        both = (pp > 1) & (dp > 1)
        codes = top['rank_order'].attrs['codes']
        codes = codes.decode() if isinstance(codes, bytes) else codes
        check(set(order[both].tolist()) == {'tp-cp-ep-dp-pp', 'tp-cp-ep-pp-dp'} and
              set(order[~both].tolist()) <= {'tp-cp-ep-dp-pp'} and
              codes == '0 tp-cp-ep-dp-pp, 1 tp-cp-ep-pp-dp',
              f'sweep --rank-order both: orders {sorted(set(order[both].tolist()))} where pp > 1 and dp > 1, '
              f'{sorted(set(order[~both].tolist()))} elsewhere; codes "{codes}"')

# 2. --strat all: its best row is the best of the three single-strategy runs', under the paper's
# model (which runs every strategy) and under megatron (which runs 1d only: the others dropped).
gpus = ['--model', 'llama3_70b', '--system', 'H100', '--n-gpus', '512', '--runtime', 'reference']
best_all = configs_csv(*gpus, '--strat', 'all', '--top', '1')[0]
singles = [configs_csv(*gpus, '--strat', s, '--top', '1')[0] for s in ('1d', '2d', '2d-seqp')]
fastest = max(singles, key=lambda r: float(r['throughput']))
check(best_all == fastest, f'configs --strat all: best {best_all["strategy"]} {best_all["throughput"]} samples/s, '
      f'the fastest of the single-strategy runs ({", ".join(r["strategy"] + " " + r["throughput"] for r in singles)})')
r = run('configs', '--model', 'llama3_70b', '--system', 'H100', '--n-gpus', '512', '--strat', 'all', '--top', '1')
one_d = configs_csv('--model', 'llama3_70b', '--system', 'H100', '--n-gpus', '512', '--strat', '1d', '--top', '1')
check('--strat 2d dropped: runtime megatron does not run strategy 2d' in r.stderr and
      configs_csv('--model', 'llama3_70b', '--system', 'H100', '--n-gpus', '512', '--strat', 'all', '--top', '1') == one_d,
      'configs --strat all under megatron: 2d and 2d-seqp dropped with a log line, the rows of --strat 1d')

# 3. Options a strategy cannot take: dropped from its list with a log line, refused when none is left.
r = run('configs', *gpus, '--strat', '1d,2d-seqp', '--sp', 'on,off', '--top', '3')
check('--sp off dropped for 2d-seqp' in r.stderr, 'configs: --sp off dropped for 2d-seqp with a log line')
rows = configs_csv(*gpus, '--strat', '1d,2d-seqp', '--sp', 'on,off')
check(not any(x['strategy'] == '2d-seqp' and x['sp'] == 'off' for x in rows) and
      any(x['strategy'] == '1d' and x['sp'] == 'off' for x in rows), 'configs: sp off in 1d rows only')
r = run('configs', *gpus, '--strat', '2d-seqp', '--sp', 'off', expect=2)
check(re.search(r'^configs: error: --sp off with --strat 2d-seqp', r.stderr, re.M) is not None,
      'configs --strat 2d-seqp --sp off: refused (exit 2)')
r = run('configs', *gpus, '--strat', 'all', '--precision', 'fp8', expect=2)
check('configs: error: --precision fp8' in r.stderr, 'configs --strat all --precision fp8 (reference runtime): refused')

# 4. sweep --strat all: three files, and a closing line whose best is the fastest of the
# single-strategy sweeps' best (at the largest GPU count).
with tempfile.TemporaryDirectory() as work:
    sweep = ['--model', 'llama3_8b', '--system', 'H100', '--n-gpus', '8,16', '--runtime', 'reference',
             '--recompute', 'none,full', '--zero', '1,2', '--tokens', '1e12']
    r = run('sweep', *sweep, '--strat', 'all', '--out', os.path.join(work, 'all'))
    names = sorted(os.listdir(os.path.join(work, 'all')))
    check(names == sorted(f'exec_{s}_llama3_8b_H100.h5' for s in ('1d', '2d', '2d-seqp')),
          f'sweep --strat all writes one file per strategy: {names}')
    overall = re.findall(r'H100-NVS8: best of 1d, 2d, 2d-seqp at (\d+) GPUs: (.*)', r.stdout + r.stderr)
    single = []
    for s in ('1d', '2d', '2d-seqp'):
        rs = run('sweep', *sweep, '--strat', s, '--out', os.path.join(work, s))
        single += re.findall(r'H100-NVS8: best at (\d+) GPUs: (.*)', rs.stdout + rs.stderr)

    def tokens(line):
        return float(re.search(r'([0-9.e+]+) tokens/s per GPU', line).group(1))
    check(len(overall) == 1 and len(single) == 3 and overall[0] == max(single, key=lambda x: (int(x[0]), tokens(x[1]))),
          'sweep --strat all: the closing best is the fastest of the three single-strategy sweeps\' best')
    line = overall[0][1] if overall else ''
    wanted = ['dp=', 'tp=', 'pp=', 'mbs=', 'nv_dp=', 'nv_pp=', 'recompute=', 'sp=', 'zero=', 'interleave=', 'layout=',
              'ep=', 'precision=', 'schedule=', 'attention=', 'runtime=reference', 'step ', 'compute ', 'bubble ', 'MFU ',
              'memory ', ' of 80.0 GB', 'days', 'GPU-hours']
    check(all(w in line for w in wanted), 'the closing summary names every axis and option, the step\'s parts, '
          'the memory against the capacity and the days: ' + line[:80] + '...')
    r = run('sweep', *sweep, '--strat', '1d,2d', '-o', os.path.join(work, 'named.h5'))
    check(sorted(f for f in os.listdir(work) if f.startswith('named')) == ['named_1d.h5', 'named_2d.h5'],
          'sweep --strat 1d,2d -o named.h5: named_1d.h5 and named_2d.h5')

    # 5. Units in system files: the same results as the bare numbers they stand for.
    def system(path, replace):
        text = open(os.path.join(SOURCE, 'systems', 'H100.yaml')).read()
        for key, value in replace.items():
            text, n = re.subn(rf'^{key}: .*$', f'{key}: {value}', text, flags=re.M)
            assert n == 1, key
        with open(path, 'w') as f:
            f.write(text)
        return path

    def estimate(sys_file, *extra):
        return json.loads(run('estimate', '--model', 'llama3_8b', '--system', sys_file, '--tp', '8', '--dp', '4',
                              '--global-batch-size', '64', '--json', *extra).stdout)
    bare = estimate('H100', '--runtime', 'reference')
    # 400 Gb/s = 50 GB/s; 3.35 TB/s = 3350 GB/s; 450 GB/s as written; 80 GB as written
    units = estimate(system(os.path.join(work, 'units.yaml'), {'ib_bandwidth': '400 Gb/s', 'hbm_bandwidth': '3.35 TB/s',
                                                               'nvlink_bandwidth': '450GB/s', 'hbm_capacity': '80 GB'}),
                     '--runtime', 'reference')
    check(units['totals'] == bare['totals'], 'system file with units (400 Gb/s, 3.35 TB/s, 450GB/s, 80 GB): the '
          'totals of the bare numbers')
    gib = estimate(system(os.path.join(work, 'gib.yaml'), {'hbm_capacity': '80 GiB'}))
    check(gib['inputs']['system']['hbm_capacity'] == 80 * 2**30 / 1e9,
          f'hbm_capacity: 80 GiB reads {gib["inputs"]["system"]["hbm_capacity"]} GB (80 x 2^30 / 1e9)')
    # under a runtime that reads a bare capacity as GiB, "80 GiB" is the bare 80
    mg_bare = estimate('H100', '--runtime', 'megatron')
    mg_gib = estimate(os.path.join(work, 'gib.yaml'), '--runtime', 'megatron')
    check(mg_gib['totals']['mem_limit'] == mg_bare['totals']['mem_limit'],
          'under megatron (capacity_in_gib) hbm_capacity: 80 GiB is the bare 80')
    r = run('estimate', '--system', system(os.path.join(work, 'bad.yaml'), {'ib_bandwidth': '400 Gbit/s'}),
            expect=2)
    check(re.search(r"^estimate: error: .*bad\.yaml: ib_bandwidth: unknown unit 'Gbit/s' in '400 Gbit/s'", r.stderr,
                    re.M) is not None, 'an unknown unit: exit 2 naming the file, the key and the value')

sys.exit(1 if FAILED else 0)
