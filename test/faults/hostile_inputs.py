#!/usr/bin/python3
"""Hostile inputs of every kind (issue 23): each a shipped file with one value made hostile (a list
where a name or number belongs, a count whose products overflow int64, a denormal where the model
divides) or a bad flag. Every tool must exit 2 with a message naming the file and the key (or the
flag), print nothing on stdout, and never die of a signal or an escaped exception.

  hostile_inputs.py BIN_DIR REPO WORK_DIR

Exit 0: passed, 1: failed.
"""
import os
import re
import shutil
import subprocess
import sys

BIN, REPO, WORK = sys.argv[1:4]
ENV = dict(os.environ, OMPI_MCA_btl='self', PMIX_MCA_gds='hash', OMPI_ALLOW_RUN_AS_ROOT='1',
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1', PERFSWEEP_DATA_DIR=REPO)
failures = []


def path(*parts):
    return os.path.join(WORK, *parts)


def mutated(source, name, old, new, count=1):
    """A copy of REPO/source under WORK/name with `old` replaced by `new` (which must occur)."""
    with open(os.path.join(REPO, source), encoding='utf-8') as f:
        text = f.read()
    assert old in text, f'{source}: {old!r} not found'
    out = path(name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'w', encoding='utf-8') as f:
        f.write(text.replace(old, new, count))
    return out


def mutated_set(name, folder, old, new):
    """A copy of the validation set REPO/validation/NAME under WORK/FOLDER whose runs.csv has its first
    `old` replaced by `new` (which must occur)."""
    out = path(folder)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(os.path.join(REPO, 'validation', name), out)
    mutated(os.path.join('validation', name, 'runs.csv'), os.path.join(folder, 'runs.csv'), old, new)
    return out


def system_with_sidecar(system, key, sidecar, name, old, new):
    """A copy of systems/SYSTEM whose `key:` file (systems/calibrations/SIDECAR) has `old` replaced
    by `new`; both copies are named NAME."""
    mutated(f'systems/calibrations/{sidecar}', f'systems/calibrations/{name}.yaml', old, new)
    return mutated(f'systems/{system}', f'systems/{name}.yaml', f'{key}: calibrations/{sidecar}',
                   f'{key}: calibrations/{name}.yaml')


def expect_exit_2(name, args, *patterns):
    """The tool exits 2, prints nothing on stdout, and its stderr matches every pattern."""
    cmd = [os.path.join(BIN, args[0])] + args[1:]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=WORK, timeout=60)
    except subprocess.TimeoutExpired:
        r = subprocess.CompletedProcess(cmd, 'hang', '', 'timed out after 60 s')
    # sweep logs to stdout: only its log lines ("[date] [info] ...") may appear there.
    printed = [line for line in r.stdout.splitlines() if line and not line.startswith('[')]
    ok = r.returncode == 2 and not printed and all(re.search(p, r.stderr) for p in patterns)
    print(('ok    ' if ok else 'FAIL  ') + f'{name}: exit {r.returncode}: ' + r.stderr.strip().splitlines()[-1:][0]
          if r.stderr.strip() else '', flush=True)
    if not ok:
        print('  $ ' + ' '.join(cmd))
        print('  stderr: ' + r.stderr.strip().replace('\n', '\n          '))
        if r.stdout:
            print('  stdout: ' + r.stdout[:300])
        failures.append(name)


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(path('systems'))
shutil.copytree(os.path.join(REPO, 'systems', 'calibrations'), path('systems', 'calibrations'))
for s in ('A100.yaml', 'B200.yaml', 'H100.yaml'):
    shutil.copy(os.path.join(REPO, 'systems', s), path('systems', s))

# Wrong-kind YAML values: a list where a name belongs.
sweep = mutated('sweeps/bw_capacity.yaml', 'sweep_list_system.yaml', 'system: B200,', 'system: [A100, B200],')
expect_exit_2('sweep file, list as base.system', ['sweep', '--sweep', sweep, '-o', path('o1.h5')],
              r'sweep_list_system\.yaml', r'base\.system must be a system name or path, got a list \(line \d+\)')
lst = mutated('sweeps/paper.yaml', 'list_system.yaml', 'system: A100,', 'system: [A100, B200],')
expect_exit_2('system list, list as system', ['sweep', '--systems', lst, '-o', path('o2.h5')],
              r'list_system\.yaml: systems\[0\]\.system must be a system name or path, got a list')
expect_exit_2('system list, list as system (bench)', ['perfsweep_bench', '--systems', lst],
              r'list_system\.yaml: systems\[0\]\.system must be')
system = system_with_sidecar('A100-calibrated.yaml', 'calibration', 'perlmutter_a100.yaml', 'list_key', '\noverhead_s:',
                             '\n[a, b]: 1\noverhead_s:')
expect_exit_2('calibration, list as a key', ['estimate', '--system', system, '--tp', '8'],
              r'list_key\.yaml', r'a key must be a plain name, got a list')

# Counts whose products would overflow int64.
for key, old, new in [('moe.capacity_factor', 'capacity_factor: 1.0', 'capacity_factor: 1073741825'),
                      ('depth', 'depth: 32', 'depth: 9223372036854775807'),
                      ('embed_dim', 'embed_dim: 4096', 'embed_dim: 1000000000')]:
    model = mutated('models/mixtral_8x7b.yaml', f'mixtral_{key}.yaml', old, new)
    expect_exit_2(f'model {key}', ['estimate', '--model', model, '--dp', '8', '--ep', '8'],
                  rf'mixtral_{re.escape(key)}\.yaml: {re.escape(key)} must be in \[')
expect_exit_2('estimate --nb', ['estimate', '--strat', '2d', '--tp1', '2', '--tp2', '2', '--nb', '9223372036854775807'],
              r'nb=9223372036854775807 exceeds embed_dim')
csv = mutated('test/data/nccl_tests_perlmutter.csv', 'nccl_nodes.csv', ',1,4,', ',4611686018427387904,4,')
expect_exit_2('nccl-tests row, 2^62 nodes', ['comm', 'validate', '-m', csv, '--system', 'A100'],
              r'nccl_nodes\.csv:\d+: num_nodes must be in \[1, ')
system = system_with_sidecar('A100-calibrated.yaml', 'calibration', 'perlmutter_a100.yaml', 'nodes', 'num_nodes: 2\n',
                             'num_nodes: 4611686018427387904\n')
expect_exit_2('calibration node count 2^62', ['estimate', '--system', system, '--tp', '8'],
              r'nodes\.yaml.*num_nodes must be in \[1, ')
runs = mutated_set('megatron_korthikanti2022', 'set_seq', '--global-batch-size 4 ',
                   '--global-batch-size 4 --seq-len 1073741825 ')
expect_exit_2('validation set row seq_len', ['validate', 'runs', runs],
              r'set_seq/runs\.csv:2: row .korthikanti-22B-full.: .*seq_len must be in \[1, 16777216\], got 1073741825')
runs = mutated_set('megatron_korthikanti2022', 'set_gbs', '--global-batch-size 4 ',
                   '--global-batch-size 9223372036854775807 ')
expect_exit_2('validation set row global batch 2^63 - 1', ['validate', 'runs', runs],
              r'set_gbs/runs\.csv:2: row .korthikanti-22B-full.: .*--global-batch-size')

# Tiny positive values where the model divides.
layers = mutated('test/data/gpu/h100_layers.json', 'layers_denormal.json', '0.0015874559879302979', '5e-324')
expect_exit_2('measured time 5e-324 s', ['validate', 'layers', '-m', layers, '--system', 'H100-calibrated'],
              r'layers_denormal\.json: .*block\[0\] must be a positive time \(at least 1e-12 s\), got 5e-324')
# (the backward's split_efficiency is 1: FlashAttention-2 splits the keys in the forward only)
system = system_with_sidecar('H100-calibrated.yaml', 'kernels', 'h100_kernels.yaml', 'denormal',
                             'split_efficiency: 1}', 'split_efficiency: 4.9e-324}')
expect_exit_2('kernel split_efficiency 4.9e-324', ['estimate', '--system', system, '--tp', '8'],
              r'denormal\.yaml.*split_efficiency must be in \[0\.000001, ')

system = mutated('systems/A100.yaml', 'systems/ib_eff_denormal.yaml', 'ib_eff: 0.7', 'ib_eff: 5e-324')
expect_exit_2('system ib_eff 5e-324', ['sweep', '--system', system, '--model', 'gpt3', '--n-gpus', '64', '-q',
                                       '-o', path('o3.h5')],
              r'ib_eff_denormal\.yaml: ib_eff must be in \[1e-06, 1\]')

# A parameter given twice on one axis of a hardware sweep: refused before any work.
grid = mutated('test/python/data/hw_sweep_zipped_small.yaml', 'twice_on_axis.yaml', '    hbm_capacity: [80, 192, 1000]\n',
               '    hbm_capacity: [80, 192, 1000]\n    hbm_capacity: [80, 192, 1000]\n')
expect_exit_2('sweep file, a parameter twice on one axis', ['sweep', '--sweep', grid, '--model', 'gpt3', '-o', path('o4.h5')],
              r"twice_on_axis\.yaml: axes\[0\]: duplicate key 'hbm_capacity'")

# perfsweep_bench: parse errors and non-positive counts.
for flag, value in [('--n-min', '0'), ('--repeat', 'abc'), ('--global-batch-size', '-1'), ('--repeat', '0')]:
    expect_exit_2(f'bench {flag} {value}', ['perfsweep_bench', flag, value], re.escape(flag))

# perfsweep_bench on a batch no layout divides: zero candidates, no rate printed as inf or nan.
r = subprocess.run([os.path.join(BIN, 'perfsweep_bench'), '--systems', 'h100_nvs8', '--n-min', '8192', '--models', 'gpt3',
                    '--strats', '1d', '--global-batch-size', '7', '-q'], capture_output=True, text=True, env=ENV,
                   timeout=120)
ok = r.returncode == 0 and not re.search(r'(?<![a-z])(-?nan|inf)(?![a-z])', r.stdout) and ' 0 ' in r.stdout
print(('ok    ' if ok else 'FAIL  ') + 'bench with zero candidates prints no inf or nan', flush=True)
if not ok:
    print('  stdout: ' + r.stdout + '\n  stderr: ' + r.stderr)
    failures.append('bench zero candidates')

print(f'{len(failures)} failed' if failures else 'all passed')
sys.exit(1 if failures else 0)
