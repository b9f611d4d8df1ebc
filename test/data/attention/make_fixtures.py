#!/usr/bin/python3
"""Per-layer golden fixtures for unfused attention (logits, softmax, dpr_at, attend), made by the
reference implementation itself.

Usage: make_fixtures.py REF cases.json > expected.json
  REF         a local copy of ShashankSubramanian/transformer-perf-estimates (modules.py,
              execution.py, systems/); run with Debian's /usr/bin/python3 (numpy, pandas).
  cases.json  a list of cases in the shape of ../layer_cases.json, each with
              "attention": "unfused" and, for 1d, optionally "recompute": true.

The reference is imported from REF and called as its stats notebook calls it (mlp_*, sa_*,
dataparallel, pipelineparallel, totals), with flash_attention=False and, for 1d,
attention_recompute as the case says. The output has the shape of ../layer_expected.json plus
"attention" and "recompute".
"""
import json
import os
import sys

import numpy as np

REF = sys.argv[1]
sys.path.insert(0, REF)
import modules as ref            # noqa: E402
from execution import totals     # noqa: E402


def plain(v):
    """numpy scalars and containers as JSON values (floats keep Python's shortest repr)."""
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [plain(x) for x in v]
    return v


def rows(df):
    return [plain(r) for r in df.to_dict('records')]


def system_of(case):
    s = case['system']
    if isinstance(s, str):
        with open(os.path.join(REF, 'systems', f'config-{s}.json')) as fh:
            s = json.load(fh)
    s = dict(s)
    s['nvlink_size'] = case['nvs']
    s.update(case.get('system_overrides', {}))
    return s


def evaluate(case, s):
    if case.get('attention') != 'unfused':
        raise SystemExit(f"{case['id']}: these fixtures are for \"attention\": \"unfused\"")
    m = dict(case['model'])
    m.setdefault('f', 4 * m['e'])
    l, e, f, h, depth = m['l'], m['e'], m['f'], m['h'], m['depth']
    c, nv, strat, gbs = case['config'], case['nv'], case['strat'], case['gbs']
    recompute = bool(case.get('recompute', False))
    if recompute and strat != '1d':
        raise SystemExit(f"{case['id']}: the reference models attention recompute in sa_1d only")
    dp, pp, b = c['dp'], c['pp'], c['mbs']
    nmb = gbs // dp // b
    seqp, dp_group, dp_fast = 1, dp, nv['dp']
    if strat == '1d':
        par, top = {'m': c['tp']}, {'t': nv['tp']}
        mlp = ref.mlp_1d(b, l, e, f, parallelism=par, topology=top, system=s)
        sa = ref.sa_1d(b, l, e, h, parallelism=par, topology=top, flash_attention=False,
                       attention_recompute=recompute, system=s)
    elif strat == '2d':
        par, top = {'m1': c['tp1'], 'm2': c['tp2']}, {'t1': nv['tp1'], 't2': nv['tp2']}
        s['summa_nb'] = c['nb']
        mlp = ref.mlp_2d(b, l, e, f, parallelism=par, topology=top, system=s)
        sa = ref.sa_2d_seqp(b, l, e, h, parallelism=par, topology=top, flash_attention=False, system=s)
    elif strat == '2d-seqp':
        par, top = {'m1': c['tp1'], 'm2': c['tp2']}, {'t1': nv['tp1'], 't2': nv['tp2']}
        mlp = ref.mlp_seqp(b, l, e, f, parallelism=par, topology=top, system=s)
        sa = ref.sa_seqp(b, l, e, h, parallelism=par, topology=top, flash_attention=False, system=s)
        seqp, dp_group, dp_fast = c['tp2'], dp * c['tp2'], nv['dp'] * nv['tp2']
    else:
        raise SystemExit(f"{case['id']}: unknown strat {strat!r}")
    dpc = ref.dataparallel(modules=[mlp, sa], depth=depth // pp, dp=dp_group, t_dp=dp_fast, overlap=True, system=s)
    p2p = float(mlp.loc[mlp['name'] == 'ln1']['activation_buffer'].iloc[0])
    ppc = ref.pipelineparallel(modules=[mlp, sa], number_micro_batches=nmb, comm_vol=p2p, pp=pp, t_pp=nv['pp'],
                               overlap=False, system=s)
    (t, _mem), stats = totals(mlp, sa, dpc, ppc, depth, pp=pp, dp=dp, seqp=seqp, number_micro_batches=nmb)
    for k, v in nv.items():
        stats['nv_' + k] = v
    return {'modules': {'mlp': rows(mlp), 'sa': rows(sa), 'dp': rows(dpc), 'pp': rows(ppc)},
            'totals': plain(stats), 'throughput': gbs / t}


def main():
    with open(sys.argv[2]) as fh:
        cases = json.load(fh)
    out = []
    for case in cases:
        s = system_of(case)
        res = evaluate(case, s)
        head = {k: case[k] for k in ('id', 'strat', 'model', 'gbs', 'config', 'nv')}
        head['attention'] = case['attention']
        head['recompute'] = bool(case.get('recompute', False))
        out.append({**head, 'system': plain(s), **res})
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
