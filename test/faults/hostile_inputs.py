#!/usr/bin/python3
"""Hostile inputs of every kind (issue 23): each a shipped file with one value made hostile (a list
where a name or number belongs, a count whose products overflow int64, a denormal where the model
divides) or a bad flag. Every tool must exit 2 with a message naming the file and the key (or the
flag), print nothing on stdout, and never die of a signal or an escaped exception.

  hostile_inputs.py BIN_DIR REPO WORK_DIR

Exit 0: passed, 1: failed.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

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
    return r


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
runs = mutated('test/data/cluster/megatron_published.csv', 'megatron_seq.csv', ',2048,51200,', ',1073741825,51200,')
expect_exit_2('measured run seq_len', ['validate', 'megatron', '-m', runs],
              r'megatron_seq\.csv:\d+: .*seq_len')
runs = mutated('test/data/cluster/megatron_published.csv', 'megatron_seq2.csv', ',2048,51200,', ',16777217,51200,')
expect_exit_2('measured run seq_len past the model limit', ['validate', 'megatron', '-m', runs],
              r'megatron_seq2\.csv:\d+: seq_len must be in \[1, 16777216\], got 16777217')

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

# Round 3 (issue 39): what got through as silently wrong, destroyed an input, failed after the
# work, broke an output or ran unbounded. Each bad input exits 2 before any work: a sweep leaves no
# output, journal or lock and logs no search.
def expect_exit_2_before_work(name, args, *patterns):
    out = args[args.index('-o') + 1]
    r = expect_exit_2(name, args, *patterns)
    left = [out + s for s in ('', '.journal', '.journal.lock') if os.path.exists(out + s)]
    log = r.stdout + r.stderr
    ok = not left and 'work units' not in log and 'searches (' not in log
    print(('ok    ' if ok else 'FAIL  ') + f'{name}: refused before any search ({left})', flush=True)
    if not ok:
        failures.append(name + ': before the work')


def read_text(source):
    with open(os.path.join(REPO, source), encoding='utf-8') as f:
        return f.read()


def written(name, text):
    out = path(name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'w', encoding='utf-8') as f:
        f.write(text)
    return out


def refused_everywhere(name, inputs, pattern):
    """`inputs` (--model FILE, --system FILE, ...) refused by estimate, and by sweep before any search."""
    expect_exit_2(name + ' (estimate)', ['estimate', *inputs, '--dp', '8'], pattern)
    slug = re.sub(r'\W+', '_', name)
    expect_exit_2_before_work(name + ' (sweep)', ['sweep', *inputs, '--n-gpus', '8', '-o', path(slug + '.h5')], pattern)


# A key twice inside a {...} mapping: Mixtral's experts, costed as 362 B parameters.
model = mutated('models/mixtral_8x7b.yaml', 'mixtral_dup.yaml', 'moe: {experts: 8,', 'moe: {experts: 8, experts: 64,')
refused_everywhere('model, a key twice in a flow mapping', ['--model', model, '--system', 'A100'],
              r"mixtral_dup\.yaml: moe: duplicate key 'experts' \(line \d+\)")
runtime = mutated('runtimes/megatron.yaml', 'runtimes/dup_state.yaml', 'moments: 8}', 'moments: 8, moments: 0}')
refused_everywhere('runtime, a key twice in states', ['--runtime', runtime, '--model', 'llama3_8b', '--system', 'H100'],
              r"dup_state\.yaml: states: duplicate key 'moments'")
hf = json.loads(read_text('test/data/hf/Mixtral-8x7B-v0.1/config.json'))
text = json.dumps(hf, indent=1).replace('"num_local_experts": 8', '"num_local_experts": 8, "num_local_experts": 64')
dup_config = written('hf_dup/config.json', text)
refused_everywhere('config.json, a key twice', ['--model', os.path.dirname(dup_config), '--system', 'H100'],
              r"hf_dup/config\.json: duplicate key 'num_local_experts' \(line \d+, column \d+\)")
# A state left out would be costed at 0 bytes (Adam's moments: 4 GB of states instead of 12).
runtime = mutated('runtimes/megatron.yaml', 'runtimes/no_moments.yaml', ', moments: 8}', '}')
refused_everywhere('runtime states without moments', ['--runtime', runtime, '--model', 'llama3_8b', '--system', 'H100'],
              r"no_moments\.yaml: states: missing key 'moments'")
# Physical bounds and kinds.
system = mutated('systems/H100.yaml', 'systems/host_tiny.yaml', 'host_bandwidth: 63', 'host_bandwidth: 1e-300')
refused_everywhere('host_bandwidth 1e-300', ['--system', system, '--model', 'llama3_8b'],
              r'host_tiny\.yaml: host_bandwidth must be in 0 or \[0\.001, 1e\+06\] GB/s, got 1e-300')
gpt2 = json.loads(read_text('test/data/hf/gpt2/config.json'))
gpt2['resid_pdrop'] = 2.0
config = written('gpt2_pdrop/config.json', json.dumps(gpt2))
refused_everywhere('resid_pdrop 2.0', ['--model', os.path.dirname(config), '--system', 'H100'],
              r'gpt2_pdrop/config\.json: resid_pdrop must be a probability \(a number in \[0, 1\]\), got 2\.0')
llama = json.loads(read_text('test/data/hf/Meta-Llama-3-8B/config.json'))
config = written('llama_text/config.json', json.dumps(dict(llama, hidden_size='4096')))
refused_everywhere('hidden_size as text', ['--model', os.path.dirname(config), '--system', 'H100'],
              r'llama_text/config\.json: hidden_size must be a positive integer, got "4096"')
# JSON as JSON: json.dump's surrogate pair for an emoji is valid; a FIFO is named as one.
config = written('llama_emoji/config.json', json.dumps(dict(llama, torch_dtype='\U0001F600')))
r = subprocess.run([os.path.join(BIN, 'estimate'), '--model', os.path.dirname(config), '--dp', '8', '--json', '-q'],
                   capture_output=True, text=True, env=ENV, cwd=WORK, timeout=60)
ok = r.returncode == 0 and json.loads(r.stdout)['inputs']['model']['name'] == 'llama_emoji'
print(('ok    ' if ok else 'FAIL  ') + f'config.json with a surrogate pair: exit {r.returncode} {r.stderr.strip()[:200]}')
if not ok:
    failures.append('surrogate pair')
fifo = path('fifo_model.yaml')
os.mkfifo(fifo)
expect_exit_2('a FIFO as --model', ['estimate', '--model', fifo], r'fifo_model\.yaml: is a FIFO; an input must be a regular file')
table = path('fifo_runs.csv')
os.mkfifo(table)
for what, args in (('--system', ['estimate', '--system', fifo]), ('--runtime', ['estimate', '--runtime', fifo]),
                  ('--sweep', ['sweep', '--sweep', fifo, '-o', path('f.h5')]),
                  ('measured runs', ['validate', 'megatron', '-m', table]),
                  ('nccl-tests rows', ['comm', 'validate', '-m', table, '--system', 'A100'])):
    expect_exit_2(f'a FIFO as {what} ({args[0]})', args,
                  r'fifo_(model\.yaml|runs\.csv): is a FIFO; an input must be a regular file')
# Text that is not UTF-8 in a model's name (estimate --json emitted invalid JSON).
model = path('bad_utf8.yaml')
with open(model, 'wb') as f:
    f.write(read_text('models/gpt3.yaml').encode().replace(b'name: gpt3', b'name: gpt3\xff'))
refused_everywhere('a model name not UTF-8', ['--model', model, '--system', 'A100'],
              r'bad_utf8\.yaml: name: not UTF-8 text, at byte 4 \(0xff\)')
# A 20 MB value of an unknown config.json key is echoed at most a few hundred bytes.
config = written('llama_big/config.json', json.dumps(dict(llama, tokenizer_blob='x' * 20_000_000)))
r = subprocess.run([os.path.join(BIN, 'estimate'), '--model', os.path.dirname(config), '--dp', '8', '--json'],
                   capture_output=True, text=True, env=ENV, cwd=WORK, timeout=60)
ok = r.returncode == 0 and len(r.stderr) < 4000 and '(20000000 bytes in all)' in r.stderr
print(('ok    ' if ok else 'FAIL  ') + f'a 20 MB value echoed capped: exit {r.returncode}, {len(r.stderr)} bytes of stderr')
if not ok:
    failures.append('20 MB value')
# Names that become HDF5 groups, and capacities below a runtime's reserve: refused before the work.
system = mutated('systems/A100.yaml', 'systems/slash.yaml', 'name: A100', 'name: a/b')
expect_exit_2_before_work('a system name with "/"', ['sweep', '--system', system, '--model', 'gpt3', '--n-gpus', '64',
                                                     '-o', path('slash.h5')],
                          r"slash\.yaml: name must be a name of 1 to 256 bytes .*got 'a/b': a '/'")
grid = mutated('test/python/data/hw_sweep_small.yaml', 'below_reserve.yaml', 'hbm_capacity: [80, 192, 1000]',
               'hbm_capacity: [0.5, 192, 1000]')
for flags in ([], ['--resume']):
    expect_exit_2_before_work('hbm_capacity below the driver reserve ' + ' '.join(flags),
                              ['sweep', '--sweep', grid, '--model', 'llama3_8b', '--runtime', 'megatron', '--n-gpus',
                               '8', '-o', path('reserve.h5'), *flags],
                              r"system 'B200': hbm_capacity 0\.5 GB \(read as GiB\) leaves the runtime megatron nothing "
                              r"to allocate")
# A sweep file named x&<y>.yaml: the XDMF sidecar is XML that parses, its grid named as the file.
grid = mutated('test/python/data/hw_sweep_small.yaml', 'x&<y>.yaml', '[80, 192, 1000]', '[80, 192]')
out = path('xml.h5')
r = subprocess.run([os.path.join(BIN, 'sweep'), '--sweep', grid, '--model', 'gpt3', '--n-gpus', '64', '-q', '-o', out],
                   capture_output=True, text=True, env=ENV, cwd=WORK, timeout=120)
try:
    name = ET.parse(path('xml.xmf')).getroot().find('Domain/Grid').get('Name')
except (ET.ParseError, OSError, AttributeError) as e:
    name = repr(e)
ok = r.returncode == 0 and name == 'x&<y>'
print(('ok    ' if ok else 'FAIL  ') + f'sweep file x&<y>.yaml: exit {r.returncode}, the sidecar\'s grid {name!r}')
if not ok:
    failures.append('xdmf name')
# configs over every option list at 16,384 GPUs ran past 10 minutes: refused at once.
t0 = time.time()
expect_exit_2('configs past --max-points',
              ['configs', '--model', 'llama3_405b', '--system', 'H100', '--n-gpus', '16384', '--runtime', 'megatron',
               '--mbs', 'all', '--recompute', 'none,selective,full', '--zero', '0,1', '--interleave', '1,2,4,8',
               '--schedule', '1f1b,zb-h1,zb-h2,dualpipe', '--cp', '1,2,4,8', '--cp-comm', 'p2p,all-gather,a2a',
               '--rank-order', 'tp-cp-ep-dp-pp,tp-cp-ep-pp-dp', '--precision', 'bf16,fp8', '--offload',
               'none,optimizer', '--offload-percent', '25,50,100', '--all-placements'],
              r'configs would evaluate more than --max-points=1000000 configurations')
print(f'      (refused in {time.time() - t0:.2f} s)')

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
