#!/usr/bin/python3
"""MLPerf Training results as a set of runs: one row per published result (submission system and
benchmark) of the LLM pre-training benchmarks, GPT-3 175B (gpt3), Llama 3.1 405B (llama31_405b)
and Llama 3.1 8B (llama31_8b), of every submitter and accelerator of the rounds given.

  import_mlperf.py SOURCE... -o validation/mlperf/runs.csv [--summary]

SOURCE is a round's results repository (mlcommons/training_results_vX.Y): a bare git directory
(read with `git show HEAD:...`), a checkout, or a folder holding part of one (test/data/
mlperf_excerpt). The round is taken from the path (training_results_vX.Y), or given as
ROUND=SOURCE (v4.1=/path/to/repo). Only the rounds of READ_ROUNDS, those this set is made of, are read;
any other round is refused.

For each `<submitter>/results/<system>/<benchmark>/result_*.txt` the importer reads
  - `<submitter>/systems/<system>.json`: accelerator, nodes, accelerators per node, NICs, framework;
  - the submission's launch configuration, `config_*.sh` under `<submitter>/benchmarks/
    <benchmark>/`, with the files it sources, evaluated by a small interpreter of the shell subset
    those files use (assignments, `${VAR:=default}`, `$(( ))`, `source`, `if/elif/else/fi`), then
    the defaults of the launch script (`: "${VAR:=default}"` lines of run_and_time.sh) and of the
    NeMo configuration (`${oc.env:VAR,default}` in conf/*.yaml) for variables the config leaves
    unset. Which config belongs to a system: the one a README next to it names for the system;
    else one in a folder or file named after the system; else those whose name's NODESxGPUS
    matches the system's and whose global batch (MINIBS x data-parallel replicas) matches the
    log's; a choice left between configs that differ in layout or precision is reported, not made;
  - the result logs (MLLOG lines): per-step timings where the logs have them (tracked_stats
    train_step_timing / train_step_time), else training segments between block and eval events
    (time per segment / steps per segment); see step_time().
The output has one row per result, sorted by id, with estimate's flags for each row it can express
(estimate_args; `validate runs validation/mlperf` predicts them); README.md next to the output
describes the columns.
"""
import argparse
import ast
import csv
import json
import math
import os
import posixpath
import re
import statistics
import subprocess
import sys

BENCHMARKS = {'gpt3': 'gpt3', 'llama31_405b': 'llama3_405b', 'llama31_8b': 'llama3_8b'}
# Folders a submission keeps a benchmark's code in (one submitter names llama31_8b's llama3_8b).
BENCHMARK_FOLDERS = {'gpt3': ('gpt3',), 'llama31_405b': ('llama31_405b', 'llama3_405b'),
                     'llama31_8b': ('llama31_8b', 'llama3_8b')}
# The rounds this set is made of (validation/mlperf/README.md, Sources); any other is refused.
READ_ROUNDS = ('v3.0', 'v4.0', 'v4.1', 'v5.1')
COLUMNS = ['id', 'round', 'submitter', 'system', 'benchmark', 'perfsweep_model', 'gpu', 'gpu_memory_gb',
           'gpus', 'nodes', 'gpus_per_node', 'nvlink_domain', 'nics_per_node', 'nic_gbps', 'framework',
           'precision', 'fp8_recipe', 'fp8_params', 'tp', 'pp', 'vp', 'cp', 'ep', 'dp', 'mbs', 'gbs', 'seq_len',
           'sequence_parallel', 'tp_comm_overlap', 'rank_order', 'cuda_graphs', 'activation_recompute', 'step_s',
           'step_s_method', 'samples_per_s', 'n_result_logs', 'time_to_train_min', 'source_files',
           'expressible', 'reason', 'args']
# Accelerators perfsweep has a system file for (systems/<GPU>-calibrated.yaml).
SUPPORTED_GPUS = ('A100', 'H100', 'H200', 'B200', 'B300', 'GB200', 'GB300')
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NVL72_GPUS = ('GB200', 'GB300')
# Variables of a launch configuration the layout columns read.
LAYOUT_VARS = {'TENSOR_MODEL_PARALLEL', 'TP', 'PIPELINE_MODEL_PARALLEL', 'PP', 'CONTEXT_PARALLEL', 'CP',
               'EXPERT_PARALLEL', 'EXPERT_MODEL_PARALLEL', 'EP', 'INTERLEAVED_PIPELINE', 'MICRO_BATCH_SIZE', 'MBS',
               'MINIBS', 'GBS', 'GLOBAL_BATCH_SIZE', 'FP8', 'FP4', 'FP4_RECIPE', 'FP8_RECIPE', 'FP8_AMAX_HISTORY',
               'FP8_AMAX_ALGO', 'FP8_PARAMS', 'FP8_PARAM_GATHER', 'SEQ_PARALLEL', 'TP_COMM_OVERLAP', 'FULL_CUDA_GRAPH', 'MCORE_CUDA_GRAPH',
               'LAYER_CUDA_GRAPH', 'CUDA_GRAPH', 'ENABLE_CUDA_GRAPH', 'USE_CUDA_GRAPH', 'ACT_CKPT_GRANULARITY',
               'ACT_CKPT_METHOD', 'ACT_CKPT_NUM_LAYERS', 'SEGMENT', 'DGXNNODES', 'DGXNGPU', 'ASYM_PP_EMBED',
               'ASYM_PP_LOSS', 'TP_PP_DP_MAPPING'}
STEP_TIMING_KEYS = ('train_step_timing in s', 'train_step_timing', 'train_step_time')


# ------------------------------------------------------------------------------------------------
# A round's files: a bare git directory or a folder.

class Tree:
    def __init__(self, spec):
        rnd = None
        if '=' in spec and re.match(r'^v\d+\.\d+=', spec):
            rnd, spec = spec.split('=', 1)
        self.path = os.path.abspath(spec)
        if rnd is None:
            m = re.findall(r'training_results_(v\d+\.\d+)', self.path)
            if not m:
                raise SystemExit(f'{spec}: no round in the path (training_results_vX.Y); give ROUND=PATH')
            rnd = m[-1]
        if rnd not in READ_ROUNDS:
            raise SystemExit(f'{spec}: round {rnd} is not one this set is made of ({", ".join(READ_ROUNDS)}) '
                             'and is not read')
        self.round = rnd
        self.git = os.path.isfile(os.path.join(self.path, 'HEAD')) and os.path.isdir(os.path.join(self.path, 'objects'))
        self._cache = {}
        if self.git:
            self.commit = self._git('rev-parse', 'HEAD').strip()
            out = self._git('ls-tree', '-r', '--name-only', '-z', 'HEAD')
            self.files = sorted(f for f in out.split('\0') if f)
        else:
            self.commit = ''
            files = []
            for root, dirs, names in os.walk(self.path):
                dirs[:] = [d for d in dirs if d != '.git']
                for n in names:
                    files.append(os.path.relpath(os.path.join(root, n), self.path).replace(os.sep, '/'))
            self.files = sorted(files)
        self.fileset = set(self.files)

    def _git(self, *args):
        return subprocess.run(['git', '--git-dir', self.path, *args], check=True, capture_output=True,
                              text=True, errors='replace').stdout

    def exists(self, path):
        return path in self.fileset

    def read(self, path):
        if path not in self._cache:
            if self.git:
                text = self._git('show', 'HEAD:' + path)
            else:
                with open(os.path.join(self.path, path), encoding='utf-8', errors='replace') as f:
                    text = f.read()
            self._cache[path] = text
        return self._cache[path]


# ------------------------------------------------------------------------------------------------
# The shell subset of the launch configurations.

def _matching(s, i, open_ch, close_ch):
    """Index just past the bracket closing the one opened at s[i] (s[i] == open_ch)."""
    depth, j, quote = 0, i, None
    while j < len(s):
        c = s[j]
        if quote:
            if c == '\\' and quote == '"':
                j += 2
                continue
            if c == quote:
                quote = None
        elif c in '"\'' and open_ch != '(':
            quote = c
        elif c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(s)


class Shell:
    """Evaluates the variable assignments of a launch configuration and the files it sources.
    Commands other than assignments, source, unset and if/elif/else/fi are ignored (echo, mkdir,
    exit in branches that are not taken...)."""

    def __init__(self, tree, fallback_dirs=()):
        self.tree = tree
        self.fallback_dirs = list(fallback_dirs)
        self.env = {}
        self.sourced = []
        self.missing = []
        self.script = ''

    # expansions
    def expand(self, s):
        out, i, dq = [], 0, False
        while i < len(s):
            c = s[i]
            if c == '"':
                dq = not dq
                i += 1
            elif c == "'" and not dq:
                j = s.find("'", i + 1)
                j = len(s) if j < 0 else j
                out.append(s[i + 1:j])
                i = j + 1
            elif c == '\\' and i + 1 < len(s):
                out.append(s[i + 1])
                i += 2
            elif s.startswith('$((', i):
                j = _matching(s, i + 1, '(', ')')
                out.append(str(self.arith(s[i + 3:j - 2])))
                i = j
            elif s.startswith('$(', i):
                j = _matching(s, i + 1, '(', ')')
                out.append(self.command(s[i + 2:j - 1]))
                i = j
            elif s.startswith('${', i):
                j = _matching(s, i + 1, '{', '}')
                out.append(self.param(s[i + 2:j - 1]))
                i = j
            elif c == '$':
                m = re.match(r'[A-Za-z_][A-Za-z_0-9]*|[0-9@#?]', s[i + 1:])
                if m:
                    out.append(self.env.get(m.group(0), ''))
                    i += 1 + len(m.group(0))
                else:
                    out.append(c)
                    i += 1
            else:
                out.append(c)
                i += 1
        return ''.join(out)

    def param(self, body):
        if body == 'BASH_SOURCE[0]' or body == 'BASH_SOURCE':
            return self.script
        m = re.match(r'^([A-Za-z_][A-Za-z_0-9]*)(?:(:?[-=?+])(.*))?$', body, re.S)
        if not m:
            return ''
        name, op, word = m.group(1), m.group(2), m.group(3)
        value = self.env.get(name)
        if op is None:
            return value or ''
        unset_or_empty = value is None or (op.startswith(':') and value == '')
        kind = op[-1]
        if kind == '-':
            return self.expand(word) if unset_or_empty else value
        if kind == '=':
            if unset_or_empty:
                self.env[name] = self.expand(word)
            return self.env[name]
        if kind == '+':
            return '' if unset_or_empty else self.expand(word)
        return value or ''  # ${VAR:?message}

    def command(self, cmd):
        cmd = cmd.strip()
        if re.fullmatch(r'dirname\s+"?\$\{?BASH_SOURCE(\[0\])?\}?"?', cmd):
            return posixpath.dirname(self.script)
        # $(basename $(readlink -f ${BASH_SOURCE[0]}) | sed 's/^config_//' | sed 's/\.sh$//')
        if 'BASH_SOURCE' in cmd and 'basename' in cmd:
            name = posixpath.basename(self.script)
            if "s/^config_//" in cmd:
                name = re.sub(r'^config_', '', name)
            if "s/\\.sh$//" in cmd:
                name = re.sub(r'\.sh$', '', name)
            return name
        return ''

    def arith(self, expr):
        expr = self.expand(expr)

        def var(m):
            v = self.env.get(m.group(0), '0').strip()
            return v if re.fullmatch(r'-?\d+', v) else '0'
        expr = re.sub(r'[A-Za-z_][A-Za-z_0-9]*', var, expr)
        expr = expr.replace('&&', ' and ').replace('||', ' or ')
        expr = re.sub(r'(?<![=!<>])!(?!=)', ' not ', expr)
        try:
            return _int_eval(ast.parse(expr.strip() or '0', mode='eval').body)
        except Exception:
            return 0

    # conditions: [[ ... ]] / [ ... ] groups joined by && and ||
    def condition(self, text):
        text = text.strip()
        parts, i, cur = [], 0, ''
        while i < len(text):
            if text.startswith('[[', i):
                j = text.find(']]', i)
                j = len(text) if j < 0 else j
                cur += text[i:j + 2]
                i = j + 2
            elif text.startswith('&&', i) or text.startswith('||', i):
                parts.append(cur.strip())
                parts.append(text[i:i + 2])
                cur = ''
                i += 2
            else:
                cur += text[i]
                i += 1
        parts.append(cur.strip())
        result = self._test(parts[0])
        for k in range(1, len(parts) - 1, 2):
            if parts[k] == '&&':
                result = result and self._test(parts[k + 1])
            else:
                result = result or self._test(parts[k + 1])
        return result

    def _test(self, group):
        negate = False
        if group.startswith('!'):
            negate, group = True, group[1:].strip()
        m = re.fullmatch(r'\[\[(.*)\]\]|\[(.*)\]', group.strip(), re.S)
        if not m:
            return False
        words = [self.expand(w) for w in _words(m.group(1) if m.group(1) is not None else m.group(2))]
        r = _evaluate_test(words)
        return (not r) if negate else r

    # statements
    def run_file(self, path):
        if not self.tree.exists(path):
            alt = [posixpath.join(d, posixpath.basename(path)) for d in self.fallback_dirs]
            alt = [a for a in alt if self.tree.exists(a)]
            if not alt:
                self.missing.append(path)
                return
            path = alt[0]
        saved = self.script
        self.script = path
        self.sourced.append(path)
        self.run(self.tree.read(path))
        self.script = saved

    def run(self, text):
        stack = []  # (active, branch_taken) per open if
        for stmt in _statements(text):
            active = all(a for a, _ in stack)
            head = stmt.split(None, 1)[0] if stmt.split() else ''
            if head == 'if':
                cond = stmt[2:].strip()
                taken = active and self.condition(cond)
                stack.append((taken, taken))
                continue
            if head == 'elif' and stack:
                _, was = stack.pop()
                outer = all(a for a, _ in stack)
                taken = outer and not was and self.condition(stmt[4:].strip())
                stack.append((taken, was or taken))
                continue
            if head == 'else' and stack:
                _, was = stack.pop()
                outer = all(a for a, _ in stack)
                stack.append((outer and not was, True))
                continue
            if head == 'fi' and stack:
                stack.pop()
                continue
            if head in ('then', 'do', 'done'):
                continue
            if active:
                self.statement(stmt)

    def statement(self, stmt):
        # cond && A || B
        m = re.match(r'^(\[\[.*?\]\]|\[ .*? \])\s*&&\s*(.*?)(?:\s*\|\|\s*(.*))?$', stmt)
        if m:
            if self.condition(m.group(1)):
                self.statement(m.group(2))
            elif m.group(3):
                self.statement(m.group(3))
            return
        words = stmt.split(None, 1)
        head = words[0]
        rest = words[1] if len(words) > 1 else ''
        if head in ('source', '.'):
            target = self.expand(_words(rest)[0]) if rest else ''
            if target:
                base = posixpath.dirname(self.script)
                path = posixpath.normpath(target if target.startswith(base) else posixpath.join(base, target)) \
                    if not target.startswith('/') else target
                self.run_file(path)
            return
        if head == ':':
            for w in _words(rest):
                self.expand(w)
            return
        if head == 'unset':
            for name in rest.split():
                if not name.startswith('-'):
                    self.env.pop(name, None)
            return
        if head in ('export', 'declare', 'readonly', 'local'):
            for w in _words(rest):
                if w.startswith('-'):
                    continue
                self.assign(w)
            return
        if re.match(r'^[A-Za-z_][A-Za-z_0-9]*\+?=', head):
            for w in _words(stmt):
                if re.match(r'^[A-Za-z_][A-Za-z_0-9]*\+?=', w):
                    self.assign(w)
                else:
                    break  # VAR=x command: a command's environment, ignored
            return

    def assign(self, word):
        m = re.match(r'^([A-Za-z_][A-Za-z_0-9]*)(\+?=)(.*)$', word, re.S)
        if not m:
            return
        value = self.expand(m.group(3))
        if m.group(2) == '+=':
            value = self.env.get(m.group(1), '') + value
        self.env[m.group(1)] = value


def _int_eval(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp):
        v = _int_eval(node.operand)
        return {ast.USub: lambda: -v, ast.UAdd: lambda: v, ast.Not: lambda: int(not v)}[type(node.op)]()
    if isinstance(node, ast.BinOp):
        a, b = _int_eval(node.left), _int_eval(node.right)
        if isinstance(node.op, ast.Div):
            return int(a / b)
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.Mod: lambda: int(math.fmod(a, b)), ast.Pow: lambda: a ** b, ast.FloorDiv: lambda: a // b}
        return ops[type(node.op)]()
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        a, b = _int_eval(node.left), _int_eval(node.comparators[0])
        ops = {ast.Eq: a == b, ast.NotEq: a != b, ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b}
        return int(ops[type(node.ops[0])])
    if isinstance(node, ast.BoolOp):
        vals = [_int_eval(v) for v in node.values]
        return int(all(vals)) if isinstance(node.op, ast.And) else int(any(vals))
    raise ValueError('unsupported arithmetic')


def _evaluate_test(w):
    def num(x):
        try:
            return int(x)
        except ValueError:
            return 0
    if len(w) == 2 and w[0] in ('-n', '-z', '-f', '-d', '-e'):
        return {'-n': w[1] != '', '-z': w[1] == ''}.get(w[0], False)
    if len(w) == 3:
        a, op, b = w
        if op in ('==', '='):
            return a == b
        if op == '!=':
            return a != b
        if op in ('-eq', '-ne', '-gt', '-ge', '-lt', '-le'):
            x, y = num(a), num(b)
            return {'-eq': x == y, '-ne': x != y, '-gt': x > y, '-ge': x >= y, '-lt': x < y, '-le': x <= y}[op]
    if len(w) == 1:
        return w[0] != ''
    return False


def _words(s):
    """Split on blanks outside quotes and $( ), ${ } groups (the words keep their quotes)."""
    words, cur, i = [], '', 0
    while i < len(s):
        c = s[i]
        if c in ' \t\n':
            if cur:
                words.append(cur)
                cur = ''
            i += 1
        elif c in '"\'':
            j = i + 1
            while j < len(s) and s[j] != c:
                if s[j] == '\\' and c == '"':
                    j += 1
                elif c == '"' and s.startswith('$(', j):
                    j = _matching(s, j + 1, '(', ')') - 1
                elif c == '"' and s.startswith('${', j):
                    j = _matching(s, j + 1, '{', '}') - 1
                j += 1
            cur += s[i:j + 1]
            i = j + 1
        elif s.startswith('$(', i):
            j = _matching(s, i + 1, '(', ')')
            cur += s[i:j]
            i = j
        elif s.startswith('${', i):
            j = _matching(s, i + 1, '{', '}')
            cur += s[i:j]
            i = j
        else:
            cur += c
            i += 1
    if cur:
        words.append(cur)
    return words


def _statements(text):
    """Statements of a script: continuation lines joined, comments dropped, split at ';' outside
    quotes and brackets (so `if [[ x ]]; then` gives `if [[ x ]]` and `then`)."""
    text = re.sub(r'\\\n', ' ', text)
    out = []
    for line in text.split('\n'):
        cur, i, quote, depth = '', 0, None, 0
        while i < len(line):
            c = line[i]
            if quote:
                if c == '\\' and quote == '"':
                    cur += line[i:i + 2]
                    i += 2
                    continue
                if c == quote:
                    quote = None
            elif c in '"\'':
                quote = c
            elif c in '({':
                depth += 1
            elif c in ')}':
                depth -= 1
            elif c == '#' and (i == 0 or line[i - 1] in ' \t') and depth <= 0:
                break
            elif c == ';' and depth <= 0:
                if cur.strip():
                    out.append(cur.strip())
                cur = ''
                i += 1
                continue
            cur += c
            i += 1
        if cur.strip():
            out.append(cur.strip())
    return out


def evaluate_config(tree, config):
    """A launch configuration evaluated: the config and what it sources (a sourced file missing
    from the config's folder is taken from the submission's other implementation folder that has
    it, the one a README next to the config links first), then the defaults of the
    implementation's run_and_time.sh (`: "${VAR:=x}"` lines) and of its NeMo
    YAML (`${oc.env:VAR,x}`) for what is still unset.
    Returns {'env', 'set' (names the config itself set), 'files', 'missing', 'minibs_default'}."""
    sh = Shell(tree, fallback_dirs=_fallback_dirs(tree, config))
    sh.run_file(config)
    files = list(sh.sourced)
    own = set(sh.env)
    text = '\n'.join(tree.read(f) for f in sh.sourced)
    minibs_default = bool(re.search(r'\$\{MINIBS:?[-=]', text))
    impl = posixpath.dirname(config)
    for d in [impl] + [posixpath.dirname(f) for f in sh.sourced if posixpath.dirname(f) != impl][:1]:
        run_script = posixpath.join(d, 'run_and_time.sh')
        if tree.exists(run_script):
            lines = [ln for ln in tree.read(run_script).split('\n')
                     if re.match(r'^\s*:\s+"?\$\{[A-Za-z_][A-Za-z_0-9]*:?=', ln)]
            before = dict(sh.env)
            sh.script = run_script
            sh.run('\n'.join(lines))
            if any(sh.env.get(k) != before.get(k) for k in LAYOUT_VARS):
                files.append(run_script)
            break
    for d in [impl] + [posixpath.dirname(f) for f in sh.sourced if posixpath.dirname(f) != impl][:1]:
        yamls = sorted(f for f in tree.files if f.startswith(d + '/conf/') and f.endswith('.yaml')
                       and f.count('/') == d.count('/') + 2)
        for path in yamls:
            used = False
            for m in re.finditer(r'\$\{oc\.env:([A-Za-z_][A-Za-z_0-9]*),([^${}]*)\}', tree.read(path)):
                name, default = m.group(1), m.group(2).strip().strip('\'"')
                if name not in sh.env:
                    sh.env[name] = default
                    used = used or name in LAYOUT_VARS
            if used:
                files.append(path)
        if yamls:
            break
    return {'env': sh.env, 'set': own, 'files': files, 'missing': sh.missing, 'minibs_default': minibs_default}


def _fallback_dirs(tree, config):
    """Other implementation folders of the config's benchmark, a README's links first."""
    impl = posixpath.dirname(config)
    parent = posixpath.dirname(impl)
    linked = []
    for f in tree.files:
        if posixpath.dirname(f) == impl and re.match(r'README.*\.md$', posixpath.basename(f)):
            for m in re.finditer(r'\]\((\.\./[^)\s]+)\)', tree.read(f)):
                linked.append(posixpath.normpath(posixpath.join(impl, m.group(1))))
    others = sorted({posixpath.dirname(f) for f in tree.files if posixpath.dirname(posixpath.dirname(f)) == parent
                     and posixpath.dirname(f) != impl})
    return list(dict.fromkeys(linked + others))


# ------------------------------------------------------------------------------------------------
# Result logs.

def mllog_events(text):
    events = []
    for line in text.split('\n'):
        i = line.find(':::MLLOG ')
        if i < 0:
            continue
        try:
            events.append(json.loads(line[i + 9:]))
        except json.JSONDecodeError:
            continue
    return events


def log_summary(events):
    """The parts of one result log the set uses."""
    s = {'gbs': None, 'seq': None, 'run_start': None, 'run_stop': None, 'status': None, 'steps': [],
         'marks': []}
    seen_steps = set()
    for e in events:
        key, value, md, t = e.get('key'), e.get('value'), e.get('metadata') or {}, e.get('time_ms')
        if key == 'global_batch_size' and s['gbs'] is None:
            s['gbs'] = int(value)
        elif key == 'max_sequence_length' and s['seq'] is None:
            s['seq'] = int(value)
        elif key == 'run_start' and s['run_start'] is None:
            s['run_start'] = t
        elif key == 'run_stop':
            s['run_stop'], s['status'] = t, md.get('status')
        elif key == 'tracked_stats' and isinstance(value, dict):
            for k in STEP_TIMING_KEYS:
                if k in value:
                    if 'step' in md and md['step'] is None:
                        break  # NeMo 2's flush of a block's last step at the evaluation, unnumbered
                    where = (md.get('step'), md.get('samples_count'))
                    if where in seen_steps and where != (None, None):
                        continue  # the same step logged twice
                    seen_steps.add(where)
                    s['steps'].append((t, float(value[k]), k))
                    break
        elif key in ('block_start', 'block_stop', 'eval_start', 'eval_stop'):
            s['marks'].append((t, key, md))
    s['steps'].sort(key=lambda x: x[0])
    s['marks'].sort(key=lambda x: x[0])
    return s


def _position(key, md, unit, last_count):
    """Training position of a block/eval event, in steps when logged as such (NeMo 2's step next to
    samples_count), else in samples or tokens (unit says which: 'tokens' for GPT-3's epoch
    numbers), or None. A block_stop without epoch_count ends the block its block_start sized."""
    if isinstance(md.get('step'), (int, float)) and 'samples_count' in md and 'first_epoch_num' not in md:
        return ('steps', float(md['step']))
    if 'first_epoch_num' in md:
        start = float(md['first_epoch_num'])
        if key == 'block_stop':
            count = md.get('epoch_count', last_count)
            return None if count is None else (unit, start + float(count))
        return (unit, start)
    if 'epoch_num' in md:
        return (unit, float(md['epoch_num']))
    if 'samples_count' in md:
        return ('samples', float(md['samples_count']))
    return None


def training_segments(summary, gbs, seq, unit):
    """(seconds, steps) of each stretch of training between a resume event (block_start,
    eval_stop) and the next pause (block_stop, eval_start), in log order."""
    segs = []
    resume = None
    last_count = None
    for t, key, md in summary['marks']:
        pos = _position(key, md, unit, last_count)
        if key == 'block_start' and 'epoch_count' in md:
            last_count = md['epoch_count']
        if key in ('block_start', 'eval_stop'):
            if pos is not None:
                resume = (t, pos)
        elif resume is not None and pos is not None:
            (t0, p0), p1 = resume, pos
            if p0[0] == p1[0] and p1[1] > p0[1] and t > t0:
                per_step = {'steps': 1.0, 'samples': float(gbs), 'tokens': float(gbs) * seq}[p1[0]]
                segs.append(((t - t0) / 1000.0, (p1[1] - p0[1]) / per_step))
                resume = None
            # a pause that does not advance (a block_stop logged with samples_count 0) leaves the
            # segment open for the next pause (its eval_start)
    return segs


def step_time(summaries, benchmark):
    """Median per-step time over a submission's logs and how it was obtained.

    Per-step timings (tracked_stats train_step_timing, train_step_timing in s, train_step_time:
    one step's wall time, logged every LOG_EVERY_N_STEPS steps): the first logged step of each
    log is dropped (the step after run_start), the rest pooled over the logs, median.
    Else training segments (block_start or eval_stop to the next block_stop or eval_start; a
    segment's steps from the events' positions: steps, samples / gbs, or GPT-3's tokens / (gbs x
    sequence)); the first segment of each log is dropped, median of seconds per step over the rest
    pooled. Where blocks hold their evaluation (no eval_start/eval_stop logged) it is included."""
    unit = 'tokens' if benchmark == 'gpt3' else 'samples'
    steps = []
    for s in summaries:
        steps.extend(v for _, v, _ in s['steps'][1:])
    if steps:
        n = sum(1 for s in summaries if len(s['steps']) > 1)
        return statistics.median(steps), (f'median of {len(steps)} logged per-step times '
                                          f'(tracked_stats {_step_key_names(summaries)}) over {n} logs, '
                                          f'the first logged step of each log dropped')
    segs = []
    evals = False
    for s in summaries:
        gbs, seq = s['gbs'], s['seq']
        if not gbs or not seq:
            continue
        evals = evals or any(k == 'eval_start' for _, k, _ in s['marks'])
        segs.extend(training_segments(s, gbs, seq, unit)[1:])
    segs = [(sec, n) for sec, n in segs if n >= 1]
    if not segs:
        return None, 'no step timings or training segments in the logs'
    per = [sec / n for sec, n in segs]
    how = ('training segments: (t_pause - t_resume) / steps between block_start|eval_stop and the next '
           'block_stop|eval_start')
    if not evals:
        how = 'blocks: (t_block_stop - t_block_start) / steps per block, evaluation inside the block included'
    unit_note = {'gpt3': 'steps = tokens / (gbs x seq)'}.get(benchmark, 'steps from step or samples_count / gbs')
    return statistics.median(per), (f'{how}; {unit_note}; median of {len(per)} segments over '
                                    f'{len(summaries)} logs, the first segment of each log dropped')


def _step_key_names(summaries):
    return ', '.join(sorted({k for s in summaries for _, _, k in s['steps']}))


def olympic_minutes(summaries, scaling):
    """The published time-to-train: run_stop - run_start of each converged log (status success),
    olympic mean as MLPerf's result summarizer computes it (the fastest and the slowest dropped;
    a log that did not converge counts as the dropped slowest), times scaling.json's factor.
    Fewer than 3 logs (an excerpt): their mean."""
    scores = sorted((s['run_stop'] - s['run_start']) / 60000.0 for s in summaries
                    if s['run_start'] is not None and s['run_stop'] is not None and s['status'] == 'success')
    dropped = len(summaries) - len(scores)
    if not scores:
        return None
    if len(summaries) < 3:
        kept = scores
    else:
        if dropped > 1:
            return None
        kept = scores[1:len(scores) - (1 - dropped)]
    if not kept:
        return None
    return sum(kept) / len(kept) * scaling


# ------------------------------------------------------------------------------------------------
# Systems.

def gpu_name(model):
    m = model.upper()
    for pat, name in ((r'GB300', 'GB300'), (r'GB200', 'GB200'), (r'B300', 'B300'), (r'B200', 'B200'),
                      (r'H200', 'H200'), (r'H100', 'H100'), (r'A100', 'A100'), (r'MI\s?(\d{3}[A-Z]?)', None),
                      (r'TPU.?V5P', 'TPU-v5p'), (r'TRILLIUM', 'TPU-trillium'), (r'GAUDI.*2|GAUDI2', 'Gaudi2')):
        mm = re.search(pat, m)
        if mm:
            return name or 'MI' + mm.group(1)
    return model


def memory_gb(text):
    """Accelerator memory in GB as the systems file states it: MiB as GiB (MiB / 1024, the size
    vendors call GB for HBM: 81559 MiB is an H100's "80 GB"), GB and GiB as given."""
    m = re.search(r'([\d.]+)\s*(MiB|GiB|GB|G\b|MB|TB)', text or '', re.I)
    if not m:
        return ''
    v = float(m.group(1))
    unit = m.group(2).lower()
    gb = {'mib': v / 1024, 'gib': v, 'gb': v, 'g': v, 'mb': v / 1024, 'tb': v * 1024}[unit]
    return f'{gb:.1f}'.rstrip('0').rstrip('.')


def nics(sysj):
    """(NICs per node, Gb/s each) of the node's scale-out network: of the parts of host_networking
    (else host_networking_topology) that name a count (`8x ...`), the one labelled Compute, else
    the InfiniBand / ConnectX / RoCE ones, with the most NICs; its highest Gb/s figure."""
    for field in ('host_networking', 'host_networking_topology'):
        parts = [p for p in re.split(r'[,;+]', sysj.get(field, '') or '') if re.search(r'\d+\s*x\s', p)]
        if not parts:
            continue
        pick = [p for p in parts if 'compute' in p.lower()] or \
            [p for p in parts if re.search(r'infiniband|\bIB\b|connectx|roce|NDR|XDR', p, re.I)] or parts
        best = max(pick, key=lambda p: int(re.search(r'(\d+)\s*x\s', p).group(1)))
        speeds = [int(x) for x in re.findall(r'(\d+)\s*G(?:b|bps|bE)', best)]
        return re.search(r'(\d+)\s*x\s', best).group(1), (str(max(speeds)) if speeds else '')
    return '', ''


def framework_name(sysj, env, impl, gpu):
    """The training stack: family (from the accelerator, the implementation and the launch
    configuration) and the release the systems file states (NGC YY.MM, ROCm, PyTorch)."""
    fw = sysj.get('framework', '') or ''
    text = ' '.join([fw, sysj.get('framework_name', '') or '', impl]).lower()
    if gpu.startswith('TPU') or 'maxtext' in text:
        return 'maxtext (jax)'
    if gpu.startswith('Gaudi'):
        m = re.search(r'pytorch\s*([\d.]+\w*)', text)
        return 'megatron-deepspeed (pytorch' + (f' {m.group(1)})' if m else ')')
    if gpu.startswith('MI'):
        m = re.search(r'rocm\s*(\d+\.\d+(?:\.\d+)?)', text)
        return 'pytorch (rocm' + (f' {m.group(1)})' if m else ')')
    if 'MINIBS' in env or 'nemo' in text:
        m = re.search(r'(?:release|ngc)\s*(\d\d\.\d\d)', text)
        return 'nemo/megatron-core' + (f' {m.group(1)}' if m else '')
    return fw


# ------------------------------------------------------------------------------------------------
# Which launch configuration a result used.

def _config_shape(name):
    """(platform, nodes, gpus per node) from a config's file name: config_DGXH100_64x8x128x4x8_mbs2.sh."""
    m = re.match(r'config_([A-Za-z0-9.\-]+?)_(\d+)x(\d+)x', name)
    if not m:
        return None
    return m.group(1), int(m.group(2)), int(m.group(3))


def _platform_gpu(platform):
    p = platform.upper()
    for key in ('GB300', 'GB200', 'B300', 'B200', 'H200', 'H100', 'A100'):
        if key in p:
            return key
    m = re.search(r'MI(\d{3}X?)', p)
    return 'MI' + m.group(1) if m else None


def _affinity(config, system):
    """How closely a config's file or folder is named after the system: 3 the file name holds it,
    2 a folder is the system, 1 a folder is a prefix of it (hpg.dgxb200x8 for hpg.dgxb200x8.n16)."""
    if system in posixpath.basename(config):
        return 3
    shape = _config_shape(posixpath.basename(config))
    if shape and len(shape[0]) >= 6 and shape[0] in system:
        return 3  # config_XE9685Lx8B200-SXM-180GB_2x8x2... for 2xXE9685Lx8B200-SXM-180GB
    folders = config.split('/')[:-1]
    if system in folders:
        return 2
    if any(len(f) > 3 and system.startswith(f) for f in folders[3:]):
        return 1
    return 0


def find_config(tree, submitter, system, bench, nodes, gpn, gpu, log_gbs):
    """(config path or None, how it was chosen, files that chose it or candidates considered)."""
    prefixes = tuple(f'{submitter}/{top}/{b}/' for top in ('benchmarks', 'benchmark')
                     for b in BENCHMARK_FOLDERS[bench])
    files = [f for f in tree.files if f.startswith(prefixes)]
    configs = [f for f in files if re.match(r'config_.*\.sh$', posixpath.basename(f))
               and not re.search(r'config_(common|mounts|fp8|fp4|tp_|.*_common)', posixpath.basename(f))]
    # 1. a README naming the system and its config
    for f in files:
        base = posixpath.basename(f)
        if not re.match(r'README.*\.md$', base):
            continue
        text = tree.read(f)
        if system not in text:
            continue
        names = re.findall(r'(config_[A-Za-z0-9_.\-]+?\.sh)', text)
        for nm in dict.fromkeys(names):
            cand = [c for c in configs if posixpath.basename(c) == nm and posixpath.dirname(c) == posixpath.dirname(f)]
            cand = cand or [c for c in configs if posixpath.basename(c) == nm]
            if cand:
                return sorted(cand)[0], f'named for {system} in {f}', [f]
    # 2. configs named after the system (file, folder, folder prefix), best first; within a group,
    #    nodes x gpus from the file name, the platform against the accelerator (preferred), the
    #    global batch against the log's
    for rank in (3, 2, 1, 0):
        group = [c for c in configs if _affinity(c, system) == rank]
        if not group:
            continue
        shaped = []
        for c in group:
            sh = _config_shape(posixpath.basename(c))
            if sh is None:  # no NODESxGPUS in the name: the config's own DGXNNODES and DGXNGPU
                ev = evaluate_config(tree, c)
                n, g = _int(ev['env'], 'DGXNNODES'), _int(ev['env'], 'DGXNGPU', default=8)
                if {'DGXNNODES'} & ev['set'] and n == nodes and g == gpn:
                    shaped.append((c, None))
            elif sh[1] == nodes and sh[2] == gpn:
                shaped.append((c, _platform_gpu(sh[0])))
        same = [c for c, pg in shaped if pg in (None, gpu)]
        candidates = same or [c for c, _ in shaped]
        evaluated = []
        for c in candidates:
            ev = evaluate_config(tree, c)
            lay = layout(ev['env'], nodes * gpn if nodes and gpn else None)
            if log_gbs and lay.get('gbs_config') and lay['gbs_config'] != log_gbs and not ev['minibs_default']:
                continue
            evaluated.append((c, lay))
        if not evaluated:
            continue
        keys = ('tp', 'pp', 'vp', 'cp', 'mbs', 'precision', 'fp8_recipe', 'cuda_graphs')
        distinct = {tuple(lay.get(k) for k in keys) for _, lay in evaluated}
        where = {3: 'named after the system', 2: 'in a folder named after the system',
                 1: 'in a folder named after the system\'s family', 0: 'among the submission\'s configs'}[rank]
        if len(distinct) == 1:
            chosen = sorted(c for c, _ in evaluated)[0]
            how = f'{where}, by nodes x accelerators' + ('' if same else ' (another platform\'s config)') + \
                ' and global batch' + (f' ({len(evaluated)} alike)' if len(evaluated) > 1 else '')
            return chosen, how, [c for c, _ in evaluated]
        return None, f'{where}, configs differ: ' + ', '.join(sorted(posixpath.basename(c) for c, _ in evaluated)), \
            [c for c, _ in evaluated]
    return None, 'no config matches the system (nodes x accelerators per node, global batch)', configs


def truthy(v):
    return str(v).strip().lower() in ('1', 'true', 'yes', 'on')


def _int(env, *names, default=None):
    for n in names:
        v = str(env.get(n, '')).strip().strip('"\'')
        if v.lower() in ('null', 'none', ''):
            continue
        try:
            return int(float(v))
        except ValueError:
            continue
    return default


def layout(env, gpus):
    """The parallel layout and numerics a launch configuration sets."""
    out = {}
    tp = _int(env, 'TENSOR_MODEL_PARALLEL', 'TP', default=1)
    pp = _int(env, 'PIPELINE_MODEL_PARALLEL', 'PP', default=1)
    cp = _int(env, 'CONTEXT_PARALLEL', 'CP', default=1)
    ep = _int(env, 'EXPERT_PARALLEL', 'EXPERT_MODEL_PARALLEL', 'EP', default=1)
    vp = _int(env, 'INTERLEAVED_PIPELINE', default=None)
    if vp is None or vp == 0 or pp == 1:
        vp = 1
    mbs = _int(env, 'MICRO_BATCH_SIZE', 'MBS')
    dp = gpus // (tp * pp * cp) if gpus and gpus % (tp * pp * cp) == 0 else None
    gbs = None
    if _int(env, 'MINIBS') is not None and dp:
        gbs = _int(env, 'MINIBS') * dp
    elif _int(env, 'GBS', 'GLOBAL_BATCH_SIZE') is not None:
        gbs = _int(env, 'GBS', 'GLOBAL_BATCH_SIZE')
    if truthy(env.get('FP4', '')):
        precision, recipe = 'fp4', (env.get('FP4_RECIPE') or 'nvfp4').strip('"\'')
    elif truthy(env.get('FP8', '')) or (not env.get('FP8') and truthy(env.get('FP8_PARAMS', ''))):
        precision = 'fp8'
        r = (env.get('FP8_RECIPE') or '').strip('"\'').lower()
        if r in ('tensorwise', 'current', 'current_scaling'):
            recipe = 'current'
        elif r in ('delayed', 'delayed_scaling'):
            recipe = 'delayed'
        elif r in ('mxfp8', 'blockwise'):
            recipe = r
        elif r:
            recipe = r
        elif env.get('FP8_AMAX_HISTORY') or env.get('FP8_AMAX_ALGO'):
            recipe = 'delayed'  # Transformer Engine's DelayedScaling (amax history and algorithm)
        else:
            recipe = ''
    elif env.get('FP8', '') != '':
        precision, recipe = 'bf16', ''
    else:
        precision, recipe = '', ''
    sp = env.get('SEQ_PARALLEL')
    tpo = env.get('TP_COMM_OVERLAP')
    graphs = [n for n in ('FULL_CUDA_GRAPH', 'MCORE_CUDA_GRAPH', 'LAYER_CUDA_GRAPH', 'CUDA_GRAPH',
                          'ENABLE_CUDA_GRAPH', 'USE_CUDA_GRAPH') if n in env]
    cuda_graphs = ''
    if graphs:
        cuda_graphs = 'true' if any(truthy(env[n]) for n in graphs) else 'false'
    gran = str(env.get('ACT_CKPT_GRANULARITY', '')).strip('"\'')
    if gran and gran.lower() not in ('null', 'none'):
        method = str(env.get('ACT_CKPT_METHOD', '')).strip('"\'')
        nl = str(env.get('ACT_CKPT_NUM_LAYERS', '')).strip('"\'')
        recompute = gran + (f' {method}' if method and method != 'null' and gran == 'full' else '') + \
            (f' {nl} layers' if nl and nl != 'null' and gran == 'full' else '')
    elif 'ACT_CKPT_GRANULARITY' in env:
        recompute = 'none'
    else:
        recompute = ''
    out.update(tp=tp, pp=pp, vp=vp, cp=cp, ep=ep, dp=dp, mbs=mbs, gbs_config=gbs, precision=precision,
               fp8_recipe=recipe, cuda_graphs=cuda_graphs, activation_recompute=recompute,
               sequence_parallel='' if sp is None else ('true' if truthy(sp) and tp > 1 else 'false'),
               tp_comm_overlap='' if tpo is None else ('true' if truthy(tpo) and tp > 1 else 'false'),
               # FP8 parameters: NeMo's fp8_params (FP8_PARAMS) or the optimizer's fp8_param_gather
               # (FP8_PARAM_GATHER, Llama 3.1 405B's custom.yaml), estimate's --fp8-params
               fp8_params='' if precision != 'fp8' else (
                   'true' if truthy(env.get('FP8_PARAMS', '')) or truthy(env.get('FP8_PARAM_GATHER', '')) else 'false'),
               segment=_int(env, 'SEGMENT'), tp_pp_dp=truthy(env.get('TP_PP_DP_MAPPING', '')),
               asym_embed=truthy(env.get('ASYM_PP_EMBED', '')), asym_loss=truthy(env.get('ASYM_PP_LOSS', '')))
    return out


# ------------------------------------------------------------------------------------------------

def fmt(v, digits=None):
    if v is None or v == '':
        return ''
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, float) and digits is not None:
        return f'{v:.{digits}g}'
    return str(v)


def import_round(tree):
    rows, extras = [], {}
    results = {}
    for f in tree.files:
        m = re.match(r'^([^/]+)/results/([^/]+)/([^/]+)/(result_[^/]*\.txt)$', f)
        if m and m.group(3) in BENCHMARKS:
            results.setdefault((m.group(1), m.group(2), m.group(3)), []).append(f)
    for (sub, system, bench), logs in sorted(results.items()):
        row = {c: '' for c in COLUMNS}
        reasons = []
        row.update(round=tree.round, submitter=sub, system=system, benchmark=bench,
                   perfsweep_model=BENCHMARKS[bench])
        row['id'] = re.sub(r'[^a-z0-9._-]+', '-', f'{tree.round}_{sub}_{system}_{bench}'.lower())
        sources = []
        sys_path = f'{sub}/systems/{system}.json'
        sysj = {}
        if tree.exists(sys_path):
            sysj = json.loads(tree.read(sys_path))
            sources.append(sys_path)
        else:
            reasons.append('no systems json')
        gpu = gpu_name(sysj.get('accelerator_model_name', ''))
        nodes = _int(sysj, 'number_of_nodes')
        gpn = _int(sysj, 'accelerators_per_node')
        gpus = nodes * gpn if nodes and gpn else None
        n_nics, nic_gbps = nics(sysj)
        row.update(gpu=gpu, gpu_memory_gb=memory_gb(sysj.get('accelerator_memory_capacity', '')), gpus=fmt(gpus),
                   nodes=fmt(nodes), gpus_per_node=fmt(gpn), nics_per_node=n_nics, nic_gbps=nic_gbps)
        # logs
        summaries = [log_summary(mllog_events(tree.read(p))) for p in sorted(logs)]
        gbs = next((s['gbs'] for s in summaries if s['gbs']), None)
        seq = next((s['seq'] for s in summaries if s['seq']), None)
        row.update(gbs=fmt(gbs), seq_len=fmt(seq), n_result_logs=str(len(logs)))
        st, how = step_time(summaries, bench)
        row['step_s'] = f'{st:.6g}' if st else ''
        row['step_s_method'] = how
        if st and gbs:
            row['samples_per_s'] = f'{gbs / st:.6g}'
        scaling = 1.0
        scale_path = f'{sub}/results/{system}/{bench}/scaling.json'
        if tree.exists(scale_path):
            scaling = float(json.loads(tree.read(scale_path)).get('scaling_factor', 1.0))
            sources.append(scale_path)
        ttt = olympic_minutes(summaries, scaling)
        row['time_to_train_min'] = f'{ttt:.6g}' if ttt else ''
        # configuration
        config, how_cfg, considered = find_config(tree, sub, system, bench, nodes, gpn, gpu, gbs)
        env, lay, notes = {}, {}, []
        if config:
            ev = evaluate_config(tree, config)
            env = ev['env']
            if how_cfg.startswith('named for'):
                sources.append(considered[0])
            sources.extend(ev['files'])
            if ev['missing'] and not {'TENSOR_MODEL_PARALLEL', 'PIPELINE_MODEL_PARALLEL'} <= ev['set']:
                reasons.append('launch configuration incomplete: ' + posixpath.basename(config) + ' sources ' +
                               ', '.join(posixpath.basename(m) for m in ev['missing']) +
                               ', which the submission does not include')
            else:
                if ev['missing']:
                    notes.append('note: ' + posixpath.basename(config) + ' sources ' +
                                 ', '.join(posixpath.basename(m) for m in ev['missing']) +
                                 ', not in the submission (the layout is set after it; what it alone sets is unknown)')
                lay = layout(env, gpus)
                row.update(tp=fmt(lay['tp']), pp=fmt(lay['pp']), vp=fmt(lay['vp']), cp=fmt(lay['cp']),
                           ep=fmt(lay['ep']), dp=fmt(lay['dp']), mbs=fmt(lay['mbs']), precision=lay['precision'],
                           fp8_recipe=lay['fp8_recipe'], fp8_params=lay['fp8_params'], sequence_parallel=lay['sequence_parallel'],
                           tp_comm_overlap=lay['tp_comm_overlap'], cuda_graphs=lay['cuda_graphs'],
                           # Megatron-Core's rank order: TP_PP_DP_MAPPING (--use-tp-pp-dp-mapping) puts a
                           # pipeline's stages inside the data-parallel replicas
                           rank_order='tp-cp-ep-pp-dp' if lay['tp_pp_dp'] else 'tp-cp-ep-dp-pp',
                           activation_recompute=lay['activation_recompute'])
                if lay.get('gbs_config') and gbs and lay['gbs_config'] != gbs:
                    if ev['minibs_default'] and lay['dp'] and gbs % lay['dp'] == 0:
                        notes.append(f'note: global batch {gbs} from the logs (MINIBS {gbs // lay["dp"]} at launch; '
                                     f'the config\'s default gives {lay["gbs_config"]})')
                    else:
                        reasons.append(f'config global batch {lay["gbs_config"]} differs from the logs\' {gbs}')
                cfg_nodes = _int(env, 'DGXNNODES', 'NNODES') if ({'DGXNNODES', 'NNODES'} & ev['set']) else None
                if cfg_nodes and nodes and cfg_nodes != nodes:
                    reasons.append(f'config nodes {cfg_nodes} differ from the system\'s {nodes}')
        elif gpu in SUPPORTED_GPUS:
            reasons.append('launch configuration not identified: ' + how_cfg)
        row['framework'] = framework_name(sysj, env, config or '', gpu)
        # NVLink domain
        if gpu in NVL72_GPUS:
            seg = lay.get('segment') if lay else None
            if seg and gpn and seg * gpn < 72:
                row['nvlink_domain'] = str(seg * gpn)
            else:
                row['nvlink_domain'] = str(min(72, gpus or 72))
        elif gpn and gpu not in ('TPU-v5p', 'TPU-trillium'):
            row['nvlink_domain'] = str(gpn)
        sources.append(f'{sub}/results/{system}/{bench}/result_*.txt')
        row['source_files'] = ';'.join(dict.fromkeys(sources))
        # expressible?
        if gpu not in SUPPORTED_GPUS:
            reasons.insert(0, f'{gpu}: no perfsweep system file')
        if lay and lay['precision'] == 'fp4' and lay['fp8_recipe'] != 'nvfp4':
            reasons.append(f'{lay["fp8_recipe"].upper() or "FP4"} training: estimate has NVFP4 alone of the FP4 recipes')
        if not st:
            reasons.append('no step time in the logs')
        row['expressible'] = 'no' if reasons else 'yes'
        row['reason'] = '; '.join(reasons + notes)
        starts = sorted(x['run_start'] for x in summaries if x['run_start'] is not None)
        extras[row['id']] = {'layout': lay, 'config': config, 'config_choice': how_cfg, 'env': env,
                             'runs': tuple(sorted((x['run_start'], x['run_stop']) for x in summaries)),
                             'first_start': starts[0] if starts else None}
        rows.append(row)
    return rows, extras


def model_depth(name):
    """The transformer blocks of models/NAME.yaml (its `depth:` key)."""
    with open(os.path.join(REPO, 'models', name + '.yaml')) as f:
        for line in f:
            if line.startswith('depth:'):
                return int(line.split(':')[1].split('#')[0])
    raise SystemExit(f'models/{name}.yaml: no depth')


def estimate_args(row):
    """An expressible row as estimate's flags, as a user would run it (validation/mlperf/set.yaml
    runs them; README.md next to runs.csv gives the mapping); '' for a row not expressible:
      --system <gpu>-calibrated (its runtime, nemo), --model perfsweep_model, --seq-len seq_len,
      --precision precision (fp4 with FP4_RECIPE nvfp4: nvfp4); --tp --pp --cp --dp --mbs
      --global-batch-size --interleave (vp);
      --fp8-params on where the config keeps FP8 parameters (FP8_PARAMS or FP8_PARAM_GATHER);
      --sp off only where tp > 1 and the config turned sequence parallelism off;
      --tp-comm-overlap off where tp > 1 and the config turned TP_COMM_OVERLAP off (nemo has it on);
      --rank-order tp-cp-ep-pp-dp where the config sets TP_PP_DP_MAPPING and pp > 1 and dp > 1 (where the
      two orders differ; nemo's is tp-cp-ep-dp-pp);
      --recompute selective|full where the config asks for it;
      --nvs nvlink_domain on GB200 and GB300 (the GPUs of one NVL72 rack a run's replicas share);
      uneven stages where pp does not divide the model's depth: Megatron-Core's
      account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split (the 405B
      configs' ASYM_PP_EMBED and ASYM_PP_LOSS) count the embedding and the loss as one block each,
      so with depth + 2 divisible by pp the first and last stages hold (depth + 2) / pp - 1 blocks
      (126 blocks on pp 8: 15, six stages of 16, 15); else `auto`."""
    if row['expressible'] != 'yes':
        return ''
    tp, pp, cp, vp = int(row['tp']), int(row['pp']), int(row['cp']), int(row['vp'] or 1)
    precision = 'nvfp4' if row['precision'] == 'fp4' else row['precision'] or 'bf16'
    args = ['--system', f'{row["gpu"]}-calibrated', '--model', row['perfsweep_model'], '--seq-len', row['seq_len'],
            '--precision', precision, '--tp', str(tp), '--pp', str(pp), '--cp', str(cp),
            '--dp', row['dp'], '--mbs', row['mbs'], '--global-batch-size', row['gbs'], '--interleave', str(vp)]
    if tp > 1 and row['sequence_parallel'] == 'false':
        args += ['--sp', 'off']
    if tp > 1 and row['tp_comm_overlap'] == 'false':
        args += ['--tp-comm-overlap', 'off']
    if row['rank_order'] == 'tp-cp-ep-pp-dp' and pp > 1 and int(row['dp']) > 1:  # the two orders differ
        args += ['--rank-order', row['rank_order']]
    if row.get('fp8_params') == 'true':
        args += ['--fp8-params', 'on']
    rec = row['activation_recompute']
    if rec.startswith('selective'):
        args += ['--recompute', 'selective']
    elif rec.startswith('full'):
        args += ['--recompute', 'full']
    if row['gpu'] in NVL72_GPUS and row['nvlink_domain']:
        args += ['--nvs', row['nvlink_domain']]
    depth = model_depth(row['perfsweep_model'])
    if depth % pp:
        if (depth + 2) % pp == 0:
            edge = (depth + 2) // pp - 1
            args += ['--first-stage-blocks', str(edge), '--last-stage-blocks', str(edge)]
        else:
            args += ['--first-stage-blocks', 'auto', '--last-stage-blocks', 'auto']
    return ' '.join(args)


def mark_duplicates_and_dates(rows, extras, days=60):
    """A result whose logs are the same runs (run_start and run_stop of every log) as a result with
    a smaller id is marked not expressible ('same runs as ID'), so that no run counts twice; a
    result whose first run started more than `days` days before the median start of its round's
    results gets a note."""
    seen = {}
    for r in rows:
        key = extras[r['id']]['runs']
        if key in seen:
            r['expressible'] = 'no'
            r['reason'] = '; '.join(x for x in (f'same runs as {seen[key]}', r['reason']) if x)
        else:
            seen[key] = r['id']
    by_round = {}
    for r in rows:
        t = extras[r['id']]['first_start']
        if t is not None:
            by_round.setdefault(r['round'], []).append(t)
    for r in rows:
        t = extras[r['id']]['first_start']
        if t is None or not by_round.get(r['round']):
            continue
        med = statistics.median(by_round[r['round']])
        if med - t > days * 86400e3:
            import datetime
            day = datetime.datetime.fromtimestamp(t / 1000, datetime.timezone.utc).date().isoformat()
            note = f'note: runs from {day}, more than {days} days before the median start of the round\'s results'
            r['reason'] = '; '.join(x for x in (r['reason'], note) if x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('sources', nargs='+', help='round repositories: bare git dirs or checkouts (ROUND=PATH)')
    ap.add_argument('-o', '--output', required=True, help='runs.csv to write (- for stdout)')
    ap.add_argument('--details', help='also write per-row details (config choice, layout extras) as JSON')
    ap.add_argument('--summary', action='store_true', help='print sources and counts as Markdown (on stderr with -o -)')
    args = ap.parse_args()
    rows, extras, trees = [], {}, []
    for spec in args.sources:
        tree = Tree(spec)
        trees.append(tree)
        r, e = import_round(tree)
        rows.extend(r)
        extras.update(e)
    rows.sort(key=lambda r: r['id'])
    mark_duplicates_and_dates(rows, extras)
    for r in rows:
        r['args'] = estimate_args(r)
    ids = [r['id'] for r in rows]
    if len(set(ids)) != len(ids):
        raise SystemExit('duplicate ids')
    if args.output == '-':
        w = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator='\n')
        w.writeheader()
        w.writerows(rows)
    else:
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        with open(args.output, 'w', newline='') as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator='\n')
            w.writeheader()
            w.writerows(rows)
    if args.details:
        with open(args.details, 'w') as f:
            json.dump({k: {'config': v['config'], 'config_choice': v['config_choice'],
                           'layout': v['layout']} for k, v in sorted(extras.items())}, f, indent=1, sort_keys=True)
    if args.summary:
        out = sys.stderr if args.output == '-' else sys.stdout
        for t in trees:
            out.write(f'- {t.round}: {t.path} commit {t.commit or "(not a git directory)"}\n')
        counts = {}
        for r in rows:
            c = counts.setdefault((r['round'], r['benchmark'], r['gpu']), [0, 0])
            c[0] += 1
            c[1] += r['expressible'] == 'yes'
        out.write('\n| round | benchmark | gpu | rows | expressible |\n| --- | --- | --- | --- | --- |\n')
        for k in sorted(counts):
            out.write(f'| {k[0]} | {k[1]} | {k[2]} | {counts[k][0]} | {counts[k][1]} |\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
