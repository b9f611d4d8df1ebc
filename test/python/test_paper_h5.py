#!/usr/bin/python3
"""End to end: an HDF5 file written by `sweep` for the paper's nine systems, read back through
scripts/perfsweep_h5.py, equals the reference's published outputs (test/data/paper) bit for bit
(the JSON holds Python's shortest round-trip repr of each double, HDF5 the double itself), and
converts to npy files holding the same tuple. Usage: test_paper_h5.py FILE.h5 STRAT MODEL DATA_DIR"""
import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'scripts'))
import perfsweep_h5 as ps  # noqa: E402


# Values compared by same() and the largest relative difference among them, for closing lines.
TALLY = {'compared': 0, 'largest': 0.0}


def same(a, b):
    """Equal doubles (NaN equal to NaN); a difference is tallied."""
    TALLY['compared'] += 1
    if a == b or (a != a and b != b):
        return True
    TALLY['largest'] = max(TALLY['largest'], abs(a - b) / max(abs(a), abs(b)))
    return False


def compare_group(name, loaded, golden):
    """(values compared, mismatches) between one group read with perfsweep_h5.load and a golden
    JSON record of the reference's output (test/data/README.md)."""
    nvs, t_max, t_min, n_gpus, configs = loaded
    assert nvs == golden['nvs'], name
    failures = compared = 0
    if not golden['n_gpus']:
        # the reference's npy keeps every searched count when nothing is feasible
        assert len(t_max) == 0 and all(len(c) == 0 for c in configs), name
        return compared, failures
    assert list(n_gpus) == golden['n_gpus'], (name, list(n_gpus), golden['n_gpus'])
    for a, b in zip(t_max + t_min, golden['t_max'] + golden['t_min']):
        failures += not same(a, b)
    for got, want in zip(configs, golden['top']):
        assert len(got) == len(want), name
        for (tp, mem, cfg, stats), g in zip(got, want):
            # (not a) + (not b): `not a + (not b)` would read as not (a + (not b)) and miss a bad mem
            failures += (not same(tp, g['throughput'])) + (not same(mem, g['mem']))
            failures += cfg != g['config']
            assert list(stats) == list(g['stats']), (list(stats), list(g['stats']))
            for k, v in g['stats'].items():
                compared += 1
                if not same(stats[k], v):
                    failures += 1
                    print(f'{name}: {k} expected {v} got {stats[k]}')
    return compared, failures


def check(path, strat, model, data_dir):
    failures = 0
    compared = 0
    for name in ps.systems(path):
        golden = json.load(open(os.path.join(data_dir, f'{strat}_{model}_{name}.json')))
        c, f = compare_group(name, ps.load(path, name), golden)
        compared += c
        failures += f
    with tempfile.TemporaryDirectory() as tmp:
        for out in ps.to_npy(path, tmp):
            arr = np.load(out, allow_pickle=True)
            assert arr.shape == (1, 5), arr.shape
            system = os.path.basename(out)[len(f'exec_{strat}_{model}_'):-4]
            want = ps.load(path, system)
            assert arr[0][0] == want[0] and list(arr[0][3]) == list(want[3]) and arr[0][4] == want[4]
    print(f'{path}: {len(ps.systems(path))} systems, {compared} stats values compared ({TALLY["compared"]} values in '
          f'all), {failures} mismatches, largest relative difference {TALLY["largest"]:.3g}')
    return failures


if __name__ == '__main__':
    sys.exit(1 if check(*sys.argv[1:5]) else 0)
