#!/usr/bin/python3
"""A deterministic, seeded mutation fuzzer over the shipped inputs of every kind (issue 23).

Each case is one shipped input (a model, system, runtime, calibration or kernel file, a hardware
sweep, a system list, measured runs, a journal, a command line, a Hugging Face config.json, a
system's network tiers, or a sweep's HDF5 file that `report` renders) with one to three mutations
(a scalar replaced by a list, a mapping, text or an extreme number; a key deleted or duplicated, at
any depth; the file truncated; random bytes; in JSON a number as text, surrogate pairs and other
escapes, bytes that are not UTF-8, a value of megabytes; in a sweep's file a value, code or
attribute no sweep writes), run through the tools that read it under a per-case timeout. A case
fails on:

  - a signal (exit code < 0) or an exit code other than 0, 1 and 2;
  - a sanitizer report on stderr ("runtime error:", "AddressSanitizer", "LeakSanitizer");
  - a hang (the per-case timeout);
  - exit 0 with a nonsensical value in the output: NaN, inf or a negative number in estimate
    --json, configs --csv or any dataset or attribute of the sweep's HDF5 (NaN only as the
    documented "nothing fits" marker of /grid/best_throughput, speedup, days and their /xdmf
    slices), "nan" or "inf" in any other printed result, or output that does not parse;
  - exit 2 with "unexpected error" (an exception no input check foresaw: no file or key named);
  - a report page that is not UTF-8 or shows NaN or inf.

The same seed gives the same cases, in the same order. Cases are spread round-robin over the input
kinds; the run stops early (reporting how far it got) when --time-limit is reached.

  fuzz.py BIN_DIR REPO WORK_DIR [--seed N] [--cases N] [--time-limit S] [--timeout S] [--jobs N]
          [--kinds a,b] [--keep]

Exit 0: no case failed, 1: some did (each printed with its command and a reproducer file).
"""
import argparse
import concurrent.futures
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time

import h5py
import numpy as np

from journal_format import record_spans, recompute_checksum

parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
parser.add_argument('bin_dir')
parser.add_argument('repo')
parser.add_argument('work')
parser.add_argument('--seed', type=int, default=23)
parser.add_argument('--cases', type=int, default=300, help='mutated cases in all (besides the unmutated baselines)')
parser.add_argument('--time-limit', type=float, default=600, help='stop starting cases after this many seconds')
parser.add_argument('--timeout', type=float, default=60, help='seconds one tool run may take before it is a hang')
parser.add_argument('--jobs', type=int, default=1)
parser.add_argument('--kinds', default='', help='only these input kinds (comma-separated)')
parser.add_argument('--keep', action='store_true', help='keep every case directory, not only failed ones')
parser.add_argument('--only', default='', help='run only these cases (comma-separated names, e.g. 00042-model), kept')
parser.add_argument('--verbose', action='store_true', help='one line per case: exit code and the last line of stderr')
ARGS = parser.parse_args()
BIN, REPO, WORK = (os.path.abspath(p) for p in (ARGS.bin_dir, ARGS.repo, ARGS.work))
ENV = dict(os.environ, OMPI_MCA_btl='self', PMIX_MCA_gds='hash', OMPI_ALLOW_RUN_AS_ROOT='1',
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1', PERFSWEEP_DATA_DIR=REPO)
SANITIZER = re.compile(r'runtime error:|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer')
NAN_INF_TEXT = re.compile(r'(?<![A-Za-z_])[-+]?(nan|inf|infinity)(?![A-Za-z_])', re.IGNORECASE)
# Datasets where NaN marks "nothing fits" (io/grid_h5.hpp, docs/hw_sweeps.md).
NOTHING_FITS = re.compile(r'^/grid/(best_throughput|speedup|days)$|^/xdmf/')

# Values a mutation puts where a scalar was: extreme and special numbers, text, lists, mappings.
HOSTILE = ['0', '-1', '-0.0', '1e308', '-1e308', '1.7976931348623157e308', '5e-324', '4.9e-324', '2.2e-308',
           '1e-13', '1e-300', 'nan', '.nan', '.inf', '-.inf', 'inf', '9223372036854775807', '9223372036854775808',
           '-9223372036854775808', '18446744073709551616', '1e19', '2147483648', '4294967297', '1073741825',
           '16777217', '0.5', '1.5', '3', '7', '0x10', '1_000', 'true', 'null', '~', "''", 'abc', '"12"', '[1, 2]',
           '[]', '{a: 1}', '{}', '[A100, B200]', '[[1]]', '1e3000']
CLI_HOSTILE = ['0', '-1', '1e308', '5e-324', 'nan', 'inf', '-inf', '9223372036854775807', '9223372036854775808',
               '-9223372036854775808', '18446744073709551616', '1073741825', '4294967297', 'abc', '', '1,2',
               '1:0', '0:4', '3:1e9', '1.5', '1e3', '0x10', '[1,2]', '1,,2', '-', '  7']
MULTIPLIERS = [0, -1, 1e6, 1e-6, 1e12, 1e-12, 2**31, 2**40, 1e300, 1e-300]


def read(path, mode='r'):
    with open(path, mode) as f:
        return f.read()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(data if isinstance(data, bytes) else data.encode('utf-8'))


# ---------------------------------------------------------------- mutations

SCALAR_LINE = re.compile(r'^(\s*(?:-\s+)?[A-Za-z_][\w.]*\s*:\s*)([^\s#{\[][^#]*?|\[[^#]*?\]|\{[^#]*?\})(\s*(?:#.*)?)$')
NUMBER = re.compile(r'(?<![\w.])[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)(?![\w.])')


def mutate_text_value(rng, text):
    """A scalar's value (after `key:`) or a number anywhere replaced by a hostile value."""
    lines = text.split('\n')
    scalar = [i for i, line in enumerate(lines) if SCALAR_LINE.match(line)]
    if scalar and rng.random() < 0.6:
        i = rng.choice(scalar)
        m = SCALAR_LINE.match(lines[i])
        lines[i] = m.group(1) + rng.choice(HOSTILE) + m.group(3)
        return '\n'.join(lines), f'line {i + 1} value -> hostile'
    numbers = list(NUMBER.finditer(text))
    if not numbers:
        return text + '\nfuzz: 1\n', 'unknown key appended'
    m = rng.choice(numbers)
    if rng.random() < 0.5:
        new = rng.choice(HOSTILE)
    else:
        try:
            new = repr(float(m.group()) * rng.choice(MULTIPLIERS))
        except (ValueError, OverflowError):
            new = '0'
        if float(m.group()).is_integer() and rng.random() < 0.5:
            try:
                new = str(int(float(new)))
            except (ValueError, OverflowError):
                pass
    return text[:m.start()] + new + text[m.end():], f'number at {m.start()} -> {new}'


def mutate_text_structure(rng, text):
    lines = text.split('\n')
    keyed = [i for i, line in enumerate(lines) if re.match(r'^\s*(-\s+)?[A-Za-z_][\w.]*\s*:', line)] or [0]
    op = rng.choice(['delete', 'duplicate', 'unknown', 'indent', 'listify', 'swap'])
    i = rng.choice(keyed)
    if op == 'delete':
        del lines[i]
    elif op == 'duplicate':
        lines.insert(i + 1, lines[i])
    elif op == 'unknown':
        indent = re.match(r'^(\s*)', lines[i]).group(1)
        lines.insert(i + 1, indent + rng.choice(['fuzz_key: 1', 'nvlink_sise: 8', 'extra: [1, 2]', 'x: {y: z}']))
    elif op == 'indent':
        lines[i] = '  ' + lines[i]
    elif op == 'listify':
        lines[i] = re.sub(r'^(\s*)', r'\1- ', lines[i], count=1)
    else:
        j = rng.choice(keyed)
        lines[i], lines[j] = lines[j], lines[i]
    return '\n'.join(lines), f'{op} line {i + 1}'


def mutate_bytes(rng, data):
    """Truncation or a few random bytes changed, inserted or deleted."""
    data = bytearray(data)
    op = rng.choice(['truncate', 'flip', 'insert', 'delete'])
    if not data:
        return bytes(data), 'empty'
    pos = rng.randrange(len(data))
    if op == 'truncate':
        return bytes(data[:pos]), f'truncated at {pos}'
    n = rng.randint(1, 4)
    for _ in range(n):
        pos = rng.randrange(max(len(data), 1))
        if op == 'flip' and data:
            data[pos] = rng.randrange(256)
        elif op == 'insert':
            data[pos:pos] = bytes([rng.choice([0, 0x0a, 0x22, 0x27, 0x2c, 0x3a, 0x5b, 0x7b, 0xff, rng.randrange(256)])])
        elif data:
            del data[pos]
    return bytes(data), f'{op} {n} bytes'


def mutate_yaml(rng, text):
    what = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        r = rng.random()
        if r < 0.55:
            text, w = mutate_text_value(rng, text)
        elif r < 0.85:
            text, w = mutate_text_structure(rng, text)
        else:
            data, w = mutate_bytes(rng, text.encode())
            text = data.decode('utf-8', 'replace')
        what.append(w)
    return text, '; '.join(what)


def mutate_csv(rng, text):
    lines = text.split('\n')
    what = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        r = rng.random()
        rows = [i for i in range(1, len(lines)) if lines[i]]
        if r < 0.6 and rows:
            i = rng.choice(rows)
            cells = lines[i].split(',')
            j = rng.randrange(len(cells))
            cells[j] = rng.choice(HOSTILE + ['', '"', '1,2'])
            lines[i] = ','.join(cells)
            what.append(f'row {i + 1} column {j + 1}')
        elif r < 0.7:
            cells = lines[0].split(',')
            j = rng.randrange(len(cells))
            op = rng.choice(['delete', 'duplicate', 'rename'])
            if op == 'delete':
                del cells[j]
            elif op == 'duplicate':
                cells.insert(j, cells[j])
            else:
                cells[j] = 'fuzz'
            lines[0] = ','.join(cells)
            what.append(f'header column {j + 1} {op}')
        elif r < 0.8 and rows:
            i = rng.choice(rows)
            lines.insert(i, lines[i] + rng.choice(['', ',extra', ',,,']))
            what.append(f'row {i + 1} duplicated')
        else:
            data, w = mutate_bytes(rng, '\n'.join(lines).encode())
            lines = data.decode('utf-8', 'replace').split('\n')
            what.append(w)
    return '\n'.join(lines), '; '.join(what)


def json_paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from json_paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from json_paths(v, path + (i,))


def hostile_json(rng):
    return rng.choice([0, -1, 1e308, -1e308, 5e-324, float('nan'), float('inf'), 2**63 - 1, 2**63, -2**63, 2**64,
                       2**30 + 1, 'abc', '', None, True, [], [1, 2], {}, {'a': 1}, 0.5, 1e-13])


def mutate_json(rng, text):
    if rng.random() < 0.2:
        data, w = mutate_bytes(rng, text.encode())
        return data.decode('utf-8', 'replace'), w
    doc = json.loads(text)
    what = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        paths = [p for p in json_paths(doc) if p]
        p = rng.choice(paths)
        parent = doc
        for k in p[:-1]:
            parent = parent[k]
        op = rng.random()
        if op < 0.6 and not isinstance(parent[p[-1]], (dict, list)):
            old = parent[p[-1]]
            if isinstance(old, (int, float)) and not isinstance(old, bool) and rng.random() < 0.4:
                try:
                    parent[p[-1]] = old * rng.choice(MULTIPLIERS)
                except OverflowError:
                    parent[p[-1]] = 0
            else:
                parent[p[-1]] = hostile_json(rng)
            what.append('/'.join(map(str, p)) + ' replaced')
        elif op < 0.8:
            if isinstance(parent, dict):
                del parent[p[-1]]
            else:
                parent.pop(p[-1])
            what.append('/'.join(map(str, p)) + ' deleted')
        else:
            parent[p[-1]] = hostile_json(rng)
            what.append('/'.join(map(str, p)) + ' replaced (container)')
    out = json.dumps(doc, indent=1)
    if rng.random() < 0.1:  # a duplicate key: the text's first "key": line repeated
        lines = out.split('\n')
        keyed = [i for i, line in enumerate(lines) if re.match(r'^\s*"[^"]+": [^{\[]', line)]
        if keyed:
            i = rng.choice(keyed)
            lines.insert(i, lines[i] if lines[i].endswith(',') else lines[i] + ',')
            out = '\n'.join(lines)
            what.append(f'line {i + 1} duplicated')
    return out, '; '.join(what)


def mutate_json_text(rng, text):
    """What a JSON reader must take or refuse that json.dumps never writes: a number as text, a key
    twice in a nested object, escapes (surrogate pairs, lone surrogates, control characters), bytes
    that are not UTF-8, a value of megabytes; else a mutation of the parsed document."""
    op = rng.random()
    if op < 0.15:  # a number as a string: "4096" is text
        numbers = list(re.finditer(r'(?<=": )-?\d[\d.eE+-]*', text))
        if numbers:
            m = rng.choice(numbers)
            return text[:m.start()] + '"' + m.group() + '"' + text[m.end():], f'number at {m.start()} as text'
    if op < 0.3:  # a key of a nested object (or the top) given twice, with another value
        keyed = list(re.finditer(r'\n(\s*)"([^"]+)": ([^\n{\[]+?)(,?)\n', text))
        if keyed:
            m = rng.choice(keyed)
            twice = f'\n{m.group(1)}"{m.group(2)}": {json.dumps(hostile_json(rng))},'
            return text[:m.start()] + twice + text[m.start():], f'key {m.group(2)!r} twice'
    if op < 0.45:  # a string value replaced by escapes
        strings = list(re.finditer(r'(?<=": )"[^"\n]*"', text))
        if strings:
            m = rng.choice(strings)
            new = rng.choice(['"\\ud83d\\ude00"', '"\\ud83d"', '"\\ude00x"', '"a\\u0000b"', '"\\u001b[31m"',
                              '"a\tb"', '"\\x41"', '"\\u12"', '"' + 'x' * 3_000_000 + '"', '"caf\u00e9"', None])
            if new is None:  # bytes that are not UTF-8
                return (text[:m.start()].encode() + b'"\xff\xfe\xc0\x80"' + text[m.end():].encode(),
                        f'string at {m.start()} -> not UTF-8')
            return text[:m.start()] + new + text[m.end():], f'string at {m.start()} -> escapes'
    if op < 0.5:  # an unknown key with a huge or nested value
        value = rng.choice(['"' + 'y' * 3_000_000 + '"', '[' * 300 + ']' * 300, '{"a": {"b": {"c": [1, 2, {"d": null}]}}}'])
        return text.replace('{', '{"fuzz_key": ' + value + ', ', 1), 'an unknown key with a large value'
    return mutate_json(rng, text)


def mutate_block(rng, text, start_key):
    """A YAML mutation inside the block that starts at `start_key:` (to the next key at its
    indentation): the network tiers of a system."""
    lines = text.split('\n')
    first = next(i for i, line in enumerate(lines) if line.startswith(start_key + ':'))
    last = first + 1
    while last < len(lines) and (not lines[last] or lines[last][0] in ' #-'):
        last += 1
    block, what = mutate_yaml(rng, '\n'.join(lines[first:last]))
    return '\n'.join(lines[:first] + [block] + lines[last:]), what


# ---------------------------------------------------------------- journals

def mutate_journal(rng, data):
    """Bytes changed anywhere (the checksums catch them), or inside one record's payload with its
    checksum recomputed (decoding and re-evaluation must catch them)."""
    spans = record_spans(data)
    if spans and rng.random() < 0.6:
        data = bytearray(data)
        start, payload, length = rng.choice(spans)
        what = []
        for _ in range(rng.choice([1, 1, 2, 4])):
            r = rng.random()
            if r < 0.4 and length >= 8:  # an aligned 8-byte field: integer or double replaced
                q = payload + 8 * rng.randrange(length // 8)
                value = rng.choice([struct.pack('<q', v) for v in (0, -1, 1, 2, 3, 4, 2**31, 2**62, -2**63, 2**63 - 1)] +
                                   [struct.pack('<d', v) for v in (float('nan'), float('inf'), -1.0, 0.0, 5e-324,
                                                                   1e308)])
                data[q:q + 8] = value
                what.append(f'payload field at {q - payload}')
            else:
                q = payload + rng.randrange(length)
                data[q] = rng.randrange(256)
                what.append(f'payload byte {q - payload}')
        recompute_checksum(data, start, length)
        return bytes(data), '; '.join(what) + ' (checksum recomputed)'
    return mutate_bytes(rng, data)


# ---------------------------------------------------------------- sweep files (report)

def mutate_h5(rng, data, work):
    """A sweep's HDF5 file altered as no sweep writes it: a value of a dataset (a time, a throughput,
    an option's code, a degree, a point's place) or a numeric attribute made hostile, a text
    attribute made markup or not UTF-8, a dataset or attribute deleted; or its bytes changed."""
    if rng.random() < 0.15:
        return mutate_bytes(rng, data)
    tmp = os.path.join(work, f'mutating-{os.getpid()}.h5')
    write(tmp, data)
    what = []
    with h5py.File(tmp, 'r+') as f:
        datasets, attrs = [], []
        f.visititems(lambda name, obj: datasets.append(name) if isinstance(obj, h5py.Dataset) else None)
        f.visititems(lambda name, obj: attrs.extend((name, k) for k in obj.attrs))
        attrs.extend(('', k) for k in f.attrs)
        numeric = [d for d in datasets if f[d].dtype.kind in 'fiu' and f[d].size > 0]
        for _ in range(rng.choice([1, 1, 2])):
            op = rng.random()
            if op < 0.55 and numeric:
                name = rng.choice(numeric)
                values = f[name][()]
                flat = values.reshape(-1)
                i = rng.randrange(flat.size)
                v = rng.choice([-1, 0, 99, 2**62, 2**63 - 1, 1e308, 5e-324, float('nan'), float('inf'), -0.5, 2.5])
                if values.dtype.kind == 'f':
                    flat[i] = v
                else:
                    flat[i] = int(v) if math.isfinite(v) and abs(v) < 2**63 else -1
                f[name][...] = values
                what.append(f'{name}[{i}] = {v}')
            elif op < 0.8 and attrs:
                obj, key = rng.choice(attrs)
                target = f[obj] if obj else f
                value = rng.choice([np.float64(-1), np.float64(float('nan')), np.int64(0), np.int64(2**62),
                                    np.bytes_(b'<script>x</script>&'), np.bytes_(b'A100\xff'), np.bytes_(b'a/b'),
                                    np.bytes_(b'\x1b[31m'), np.array([1.0, 2.0])])
                del target.attrs[key]
                target.attrs[key] = value
                what.append(f'{obj}@{key} = {value!r}'[:120])
            elif datasets:
                name = rng.choice(datasets)
                del f[name]
                what.append(f'{name} deleted')
                # A second operation never names what the first deleted.
                datasets.remove(name)
                numeric = [d for d in numeric if d != name]
                attrs = [(obj, key) for obj, key in attrs if obj != name]
    data = read(tmp, 'rb')
    os.remove(tmp)
    return data, '; '.join(what) or 'unchanged'


# ---------------------------------------------------------------- output checks

def walk_json(node, path, bad):
    if isinstance(node, dict):
        for k, v in node.items():
            walk_json(v, f'{path}.{k}', bad)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk_json(v, f'{path}[{i}]', bad)
    elif node is None:
        bad.append(f'{path} is null (NaN or inf)')
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        if not math.isfinite(node) or node < 0:
            bad.append(f'{path} = {node}')


def check_json(text):
    try:
        doc = json.loads(text)
    except ValueError as e:
        return [f'stdout is not JSON: {e}']
    bad = []
    walk_json(doc, '', bad)
    return bad


# configs' CSV columns of names: the system, the strategy, the execution options by name, attention
TEXT_COLUMNS = ('system', 'strategy', 'attention', 'launch', 'recompute', 'sp', 'layout', 'precision', 'schedule',
                'cp_comm', 'offload', 'rank_order', 'fp8_params', 'tp_comm_overlap', 'moe_dispatcher')


def check_csv(text):
    lines = [line for line in text.split('\n') if line]
    if not lines:
        return ['empty CSV']
    header = lines[0].split(',')
    bad = []
    for row in lines[1:]:
        cells = row.split(',')
        for name, cell in zip(header, cells):
            if name in TEXT_COLUMNS:
                if not cell:
                    bad.append(f'column {name}: empty')
                continue
            try:
                v = float(cell)
            except ValueError:
                bad.append(f'column {name}: not a number {cell!r}')
                continue
            # the headroom is negative where a row does not fit
            if not math.isfinite(v) or (v < 0 and name != 'mem_headroom'):
                bad.append(f'column {name} = {cell}')
    return bad[:5]


def check_h5(path):
    bad = []
    try:
        f = h5py.File(path, 'r')
    except OSError as e:
        return [f'{path} does not open: {e}']

    def numbers(name, values, nan_ok):
        a = np.asarray(values)
        if a.dtype.kind not in 'fiu' or a.size == 0:
            return
        if a.dtype.kind == 'f':
            if np.isinf(a).any():
                bad.append(f'{name}: inf')
            if not nan_ok and np.isnan(a).any():
                bad.append(f'{name}: NaN')
            if (a[~np.isnan(a)] < 0).any():
                bad.append(f'{name}: negative')
        elif (a < 0).any():
            bad.append(f'{name}: negative')

    def visit(name, obj):
        full = '/' + name
        for k, v in obj.attrs.items():
            numbers(f'{full}@{k}', v, False)
        if isinstance(obj, h5py.Dataset):
            numbers(full, obj[()], bool(NOTHING_FITS.match(full)))

    with f:
        for k, v in f.attrs.items():
            numbers(f'/@{k}', v, False)
        f.visititems(visit)
    return bad[:5]


def check_html(path):
    """The page `report` published: UTF-8, and no NaN or infinity among the numbers it shows (the
    marks' data: the svg text and the tables)."""
    try:
        text = read(path, 'rb').decode('utf-8')
    except (OSError, UnicodeDecodeError) as e:
        return [f'the page is not UTF-8 text: {e}']
    shown = re.sub(r'<script.*?</script>|<style.*?</style>', '', text, flags=re.S)
    return check_text(re.sub(r'<[^>]+>', ' ', shown))


def names_in(files):
    """The `name:` values of the case's YAML files: a model or system may be named "inf", and its
    name is printed, not computed."""
    names = set()
    for data in files.values():
        text = data if isinstance(data, str) else data.decode('utf-8', 'replace')
        names.update(m.group(1).strip('\'"') for m in re.finditer(r'^\s*name:\s*(\S+)', text, re.M))
    return names


def check_text(text, names=()):
    for n in names:
        if NAN_INF_TEXT.fullmatch(n):
            text = re.sub(rf'(?<![\w.-]){re.escape(n)}(?![\w.-])', 'NAME', text)
    m = NAN_INF_TEXT.search(text)
    return [f'printed {m.group()!r}: ...{text[max(0, m.start() - 80):m.end() + 20]}...'] if m else []


# ---------------------------------------------------------------- cases

class Case:
    def __init__(self, kind, name, files, cmd, output, what):
        self.kind, self.name, self.files, self.cmd, self.output, self.what = kind, name, files, cmd, output, what


def limited(max_bytes):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))
    return apply


def tool(name):
    return os.path.join(BIN, name)


def run_case(case):
    """Runs the case in its own directory; returns (case, failure text or None, exit code, seconds)."""
    d = os.path.join(WORK, 'cases', case.name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for rel, data in case.files.items():
        write(os.path.join(d, rel), data)
    cmd = [c.replace('{D}', d) for c in case.cmd]
    start = time.monotonic()
    try:
        r = subprocess.run(cmd, cwd=d, env=ENV, capture_output=True, timeout=ARGS.timeout,
                           start_new_session=True)
        rc, out, err = r.returncode, r.stdout.decode('utf-8', 'replace'), r.stderr.decode('utf-8', 'replace')
    except subprocess.TimeoutExpired as e:
        rc, out, err = 'hang', (e.stdout or b'').decode('utf-8', 'replace'), (e.stderr or b'').decode('utf-8', 'replace')
    seconds = time.monotonic() - start
    problems = []
    if rc == 'hang':
        problems.append(f'no exit within {ARGS.timeout:g} s')
    elif rc < 0:
        problems.append(f'killed by signal {-rc} ({signal.Signals(-rc).name})')
    elif rc not in (0, 1, 2):
        problems.append(f'exit code {rc}')
    if SANITIZER.search(err) or SANITIZER.search(out):
        problems.append('sanitizer report')
    if case.name.startswith('base-') and rc != 0:
        problems.append(f'the unmutated input exits {rc}')
    if rc == 2 and 'unexpected error' in err:
        problems.append('an exception no input check foresaw (no file or key named)')
    if rc == 0:
        kind = case.output
        if kind == 'json':
            problems += check_json(out)
        elif kind == 'csv':
            problems += check_csv(out)
        elif kind == 'html':
            problems += check_html(os.path.join(d, 'r.html'))
        elif kind == 'h5':
            h5 = os.path.join(d, 'out.h5')
            problems += check_h5(h5) if os.path.exists(h5) else ['exit 0 without out.h5']
            if case.kind == 'journal' and os.path.exists(h5) and subprocess.run(
                    [sys.executable, COMPARE_H5, REFERENCE_H5, h5], capture_output=True).returncode != 0:
                problems.append('the resumed output differs from an uninterrupted run')
        names = names_in(case.files)
        problems += check_text(out if kind in ('text', 'h5') else '', names)
        problems += check_text(err, names) if kind == 'validate' else []
    failure = None
    if problems:
        failure = '; '.join(problems) + '\n  stderr: ' + '\n          '.join(err.strip().splitlines()[-8:])
        with open(os.path.join(d, 'REPRODUCE'), 'w') as f:
            f.write(f'# {case.kind}: {case.what}\ncd {d} && ' + ' '.join(repr(c) if ' ' in c or not c else c
                                                                           for c in cmd) + '\n')
    elif not ARGS.keep:
        shutil.rmtree(d, ignore_errors=True)
    if ARGS.keep and not failure:
        with open(os.path.join(d, 'REPRODUCE'), 'w') as f:
            f.write(f'# {case.kind}: {case.what}\ncd {d} && ' + ' '.join(repr(c) if ' ' in c or not c else c
                                                                          for c in cmd) + '\n')
    return case, failure, rc, seconds, (err.strip().splitlines() or [''])[-1][:200]


def corpus():
    """Per input kind: (seed name, text or bytes, how to run a file of it -> [(cmd, output kind)])."""
    def p(*parts):
        return os.path.join(REPO, *parts)

    def first_rows(path, n, step=1):
        lines = read(p(path)).split('\n')
        return '\n'.join([lines[0]] + [x for x in lines[1::step] if x][:n]) + '\n'

    def small_sweep(text):
        text = re.sub(r'linspace: \[([^,\]]+), ([^,\]]+), \d+\]', r'linspace: [\1, \2, 3]', text)
        return re.sub(r'points_per_segment: \d+', 'points_per_segment: 2', text)

    est = [tool('estimate'), '--global-batch-size', '512', '--dp', '8', '--tp', '4', '--pp', '2', '-q']
    cfg = [tool('configs'), '--global-batch-size', '512', '--n-gpus', '64', '--top', '5', '-q']
    swp = [tool('sweep'), '--strat', '1d', '--n-gpus', '64,128', '--top-n', '2', '-q', '-o', '{D}/out.h5',
           '--max-points', '400']

    def model_runs(f):
        return [(est + ['--model', f, '--json'], 'json'), (est + ['--model', f], 'text'),
                (cfg + ['--model', f, '--csv'], 'csv'), (swp + ['--model', f, '--system', 'A100'], 'h5')]

    def system_runs(f):
        return [(est + ['--system', f, '--model', 'gpt3', '--json'], 'json'),
                (cfg + ['--system', f, '--model', 'gpt3', '--csv'], 'csv'),
                (swp + ['--system', f, '--model', 'gpt3'], 'h5')]

    def runtime_runs(f):
        under = ['--model', 'llama3_8b', '--system', 'H100', '--runtime', f, '--zero', '0']
        return [(est + under + ['--json'], 'json'), (cfg + under + ['--csv'], 'csv'), (swp + under, 'h5')]

    kinds = {}
    kinds['model'] = [(f'models/{n}', read(p('models', n)), model_runs, 'yaml')
                      for n in sorted(os.listdir(p('models')))]
    kinds['system'] = [(f'systems/{n}', read(p('systems', n)), system_runs, 'yaml')
                       for n in sorted(os.listdir(p('systems'))) if n.endswith('.yaml')]
    kinds['runtime'] = [(f'runtimes/{n}', read(p('runtimes', n)), runtime_runs, 'yaml')
                        for n in sorted(os.listdir(p('runtimes')))]
    # Calibrations and kernel files: the mutated sidecar under systems/calibrations/, read through a
    # copy of the system that names it.
    kinds['calibration'] = [(f'systems/calibrations/{n}', read(p('systems', 'calibrations', n)), system_runs, 'yaml')
                            for n in sorted(os.listdir(p('systems', 'calibrations')))]
    sweeps = [('sweeps/bw_capacity.yaml', small_sweep(read(p('sweeps', 'bw_capacity.yaml')))),
              ('sweeps/flops_capacity.yaml', small_sweep(read(p('sweeps', 'flops_capacity.yaml')))),
              ('test/python/data/hw_sweep_small.yaml', read(p('test', 'python', 'data', 'hw_sweep_small.yaml'))),
              ('test/python/data/hw_sweep_zipped_small.yaml',
               read(p('test', 'python', 'data', 'hw_sweep_zipped_small.yaml')))]
    kinds['sweep'] = [(n, t, lambda f: [(swp[:1] + ['--sweep', f, '--model', 'gpt3', '--strat', '1d', '--n-gpus',
                                                     '64,128', '--top-n', '2', '-q', '-o', '{D}/out.h5',
                                                     '--max-points', '400'], 'h5')], 'yaml') for n, t in sweeps]
    kinds['system_list'] = [
        (f'sweeps/{n}', read(p('sweeps', n)),
         lambda f: [(swp + ['--systems', f, '--model', 'gpt3'], 'h5'),
                    ([tool('perfsweep_bench'), '--systems', f, '--n-min', '8192', '--models', 'gpt3', '--strats', '1d',
                      '-q'], 'text')], 'yaml')
        for n in ('paper.yaml', 'h100_nvs8.yaml')]
    # Hugging Face config.json files, read as JSON: each in a folder of its own, named as the model.
    def hf_runs(f):
        folder = os.path.dirname(f)
        one_stage = [a if a != '2' or est[i - 1] != '--pp' else '1' for i, a in enumerate(est)]  # depths such as 61
        return [(one_stage + ['--model', folder, '--json'], 'json'), (cfg + ['--model', folder, '--csv'], 'csv'),
                (swp + ['--model', folder, '--system', 'H100'], 'h5')]

    kinds['hf_config'] = [(f'test/data/hf/{n}/config.json', read(p('test', 'data', 'hf', n, 'config.json')), hf_runs,
                           'hf_json') for n in sorted(os.listdir(p('test', 'data', 'hf'))) if n != 'bad']
    # The network tiers of a system (docs/network.md), mutated within their block.
    kinds['network_tiers'] = [(f'systems/{n}', read(p('systems', n)), system_runs, 'tiers')
                              for n in sorted(os.listdir(p('systems'))) if n.endswith('.yaml') and
                              'network_tiers:' in read(p('systems', n))]
    val = tool('validate')
    # Validation sets (validation/NAME): runs.csv or set.yaml mutated in a copy of the set's folder.
    def set_entry(name, which, text, fmt):
        return (f'validation/{name}/{which}', text, lambda f: [([val, 'runs', f], 'validate')], fmt)
    kinds['measured'] = [
        set_entry('megatron_korthikanti2022', 'runs.csv', read(p('validation/megatron_korthikanti2022/runs.csv')), 'csv'),
        set_entry('vtrain', 'runs.csv', first_rows('validation/vtrain/runs.csv', 30), 'csv'),
        set_entry('nanotron', 'runs.csv', first_rows('validation/nanotron/runs.csv', 30, 97), 'csv'),
        set_entry('nvidia_h100', 'set.yaml', read(p('validation/nvidia_h100/set.yaml')), 'yaml'),
        set_entry('nanotron', 'set.yaml', read(p('validation/nanotron/set.yaml')), 'yaml'),
        ('test/data/nccl_tests_perlmutter.csv', read(p('test/data/nccl_tests_perlmutter.csv')),
         lambda f: [([tool('comm'), 'validate', '-m', f, '--system', 'A100'], 'validate'),
                    ([tool('comm'), 'fit', '-m', f, '-o', '{D}/fit.yaml'], 'validate')], 'csv'),
        ('test/data/gpu/h100_layers.json', read(p('test/data/gpu/h100_layers.json')),
         lambda f: [([val, 'layers', '-m', f, '--system', 'H100-calibrated'], 'validate'),
                    ([val, 'fit-kernels', '-m', f, '-o', '{D}/k.yaml'], 'validate')], 'json'),
        ('test/data/gpu/h100_kernels.json', read(p('test/data/gpu/h100_kernels.json')),
         lambda f: [([val, 'kernels', '-m', f, '--system', 'H100-calibrated'], 'validate')], 'json'),
        ('test/data/gpu/h100_train.json', read(p('test/data/gpu/h100_train.json')),
         lambda f: [([val, 'train', '-m', f, '--system', 'H100-calibrated'], 'validate')], 'json'),
    ]
    return kinds


# Command lines whose numbers are replaced one at a time (kind "cli").
CLI_BASES = [
    (['estimate', '--model', 'gpt3', '--global-batch-size', '512', '--dp', '8', '--tp',
      '4', '--pp', '2', '--mbs', '1', '--nvs', '8', '--json', '-q'], 'json'),
    (['estimate', '--strat', '2d', '--tp1', '2', '--tp2', '2', '--nb', '4', '--dp', '2', '--pp', '2',
      '--global-batch-size', '64', '--tokens', '1e12', '--gpu-hour-cost', '2', '--json', '-q'], 'json'),
    (['estimate', '--model', 'mixtral_8x7b', '--system', 'H100', '--dp', '8', '--ep', '8', '--tp', '2', '--pp', '4',
      '--interleave', '2', '--zero', '1', '--first-stage-blocks', '8', '--last-stage-blocks', '8',
      '--global-batch-size', '256', '--seq-len', '4096', '--json', '-q'], 'json'),
    (['configs', '--model', 'gpt3', '--n-gpus', '256', '--tp', '1:8', '--pp', '1,2,4', '--mbs', '1:4',
      '--global-batch-size', '1024', '--top', '5', '--tokens', '1e12', '--gpu-hour-cost', '2', '--csv', '-q'], 'csv'),
    (['sweep', '--model', 'gpt3', '--strat', '1d', '--system', 'A100', '--nvs', '4,8', '--n-gpus', '32:128',
      '--top-n', '3', '--global-batch-size', '1024', '--max-points', '100', '--max-output-gb', '1', '-q', '-o',
      '{D}/out.h5'], 'h5'),
    (['perfsweep_bench', '--systems', 'h100_nvs8', '--n-min', '8192', '--models', 'gpt3', '--strats', '1d',
      '--repeat', '1', '--global-batch-size', '4096', '-q'], 'text'),
    (['comm', 'validate', '-m', os.path.join(REPO, 'test/data/nccl_tests/all_reduce_perf_2x4.txt'), '--num-nodes',
      '2', '--gpus-per-node', '4', '--system', 'A100'], 'validate'),
    (['comm', 'fit', '-m', os.path.join(REPO, 'test/data/nccl_tests/all_reduce_perf_2x4.txt'), '--num-nodes', '2',
      '--gpus-per-node', '4', '--nodes', '2', '-o', '{D}/fit.yaml'], 'validate'),
    (['validate', 'fit-kernels', '-m', os.path.join(REPO, 'test/data/gpu/h100_layers.json'), '--sm-count', '132', '-o',
      '{D}/k.yaml'], 'validate'),
]


def make_cases():
    rng = random.Random(ARGS.seed)
    kinds = corpus()
    only = set(filter(None, ARGS.kinds.split(',')))
    order = [k for k in ('model', 'system', 'runtime', 'calibration', 'sweep', 'system_list', 'measured', 'journal',
                         'cli', 'hf_config', 'network_tiers', 'report') if not only or k in only]
    baselines, cases = [], []

    def files_for(kind, seed_name, text):
        """The files a case writes (relative to its directory) and the path the tools get."""
        base = os.path.basename(seed_name)
        if kind == 'calibration':
            owner = {'perlmutter_a100.yaml': ('A100-calibrated.yaml', 'calibration'),
                     'h100_kernels.yaml': ('H100-calibrated.yaml', 'kernels'),
                     'a100_kernels.yaml': ('selene_a100.yaml', 'kernels'),
                     'a100_kernels_from_h100.yaml': ('vtrain_a100.yaml', 'kernels'),
                     'b200_kernels_from_h100.yaml': ('B200-calibrated.yaml', 'kernels'),
                     'gb200_kernels_from_h100.yaml': ('GB200-calibrated.yaml', 'kernels'),
                     'b300_kernels_from_h100.yaml': ('B300-calibrated.yaml', 'kernels'),
                     'gb300_kernels_from_h100.yaml': ('GB300-calibrated.yaml', 'kernels')}[base]
            system = read(os.path.join(REPO, 'systems', owner[0]))
            system = re.sub(rf'^{owner[1]}:\s*\S+', f'{owner[1]}: calibrations/fuzz.yaml', system, flags=re.M)
            return {'systems/calibrations/fuzz.yaml': text, 'systems/fuzz.yaml': system}, '{D}/systems/fuzz.yaml'
        if kind in ('system', 'network_tiers'):
            return {f'systems/{base}': text}, '{D}/systems/' + base
        if seed_name.startswith('validation/'):
            # the set's folder whole, the mutated file in its place
            folder = os.path.dirname(seed_name)
            files = {}
            for d, _, names in os.walk(os.path.join(REPO, folder)):
                for n in names:
                    rel = os.path.relpath(os.path.join(d, n), REPO)
                    files[rel] = read(os.path.join(d, n))
            files[seed_name] = text
            return files, '{D}/' + folder
        if kind == 'hf_config':
            folder = os.path.basename(os.path.dirname(seed_name))
            return {f'{folder}/config.json': text}, '{D}/' + folder + '/config.json'
        return {base: text}, '{D}/' + base

    def shared_files(kind):
        # calibrated systems name their sidecars relative to themselves: the shipped ones alongside
        if kind in ('system', 'calibration', 'network_tiers'):
            return {f'systems/calibrations/{n}': read(os.path.join(REPO, 'systems', 'calibrations', n))
                    for n in os.listdir(os.path.join(REPO, 'systems', 'calibrations'))}
        return {}

    mutators = {'yaml': mutate_yaml, 'csv': mutate_csv, 'json': mutate_json, 'hf_json': mutate_json_text,
                'tiers': lambda r, t: mutate_block(r, t, 'network_tiers')}
    for kind in order:
        if kind in ('journal', 'cli', 'report'):
            continue
        # Each unmutated input once, through one of its tools in turn: it must exit 0 with
        # outputs that pass the same checks, or the checks would prove nothing.
        for s, (seed_name, text, runs, fmt) in enumerate(kinds[kind]):
            files, path = files_for(kind, seed_name, text)
            all_runs = runs(path)
            cmd, out = all_runs[s % len(all_runs)]
            baselines.append(Case(kind, f'base-{kind}-{len(baselines)}', {**shared_files(kind), **files}, cmd,
                                  out, f'{seed_name} unmutated'))

    journal = make_journal() if 'journal' in order else None
    sweep_files = make_sweep_files() if 'report' in order else None
    for seed_name, seed in sweep_files or []:
        baselines.append(Case('report', f'base-report-{len(baselines)}', {'in.h5': seed},
                              [tool('report'), '{D}/in.h5', '-o', '{D}/r.html', '-q'], 'html', f'{seed_name} unmutated'))
    per_kind = {k: 0 for k in order}
    for n in range(ARGS.cases):
        kind = order[n % len(order)]
        per_kind[kind] += 1
        name = f'{n:05d}-{kind}'
        if kind == 'journal':
            data, what = mutate_journal(rng, journal[0])
            cases.append(Case(kind, name, {'out.h5.journal': data}, journal[1], 'h5', what))
        elif kind == 'report':
            seed_name, seed = rng.choice(sweep_files)
            data, what = mutate_h5(rng, seed, WORK)
            cases.append(Case(kind, name, {'in.h5': data}, [tool('report'), '{D}/in.h5', '-o', '{D}/r.html', '-q'],
                              'html', f'{seed_name}: {what}'))
        elif kind == 'cli':
            base, out = rng.choice(CLI_BASES)
            cmd = list(base)
            numeric = [i for i, a in enumerate(cmd) if i > 0 and cmd[i - 1].startswith('--') and
                       re.match(r'^[\d.,:e]+$', a)]
            what = []
            for _ in range(rng.choice([1, 1, 2])):
                i = rng.choice(numeric)
                cmd[i] = rng.choice(CLI_HOSTILE)
                what.append(f'{cmd[i - 1]} {cmd[i]!r}')
            cmd[0] = tool(cmd[0])
            cases.append(Case(kind, name, {}, cmd, out, '; '.join(what)))
        else:
            seed_name, text, runs, fmt = rng.choice(kinds[kind])
            mutated, what = mutators[fmt](rng, text)
            files, path = files_for(kind, seed_name, mutated)
            all_runs = runs(path)
            cmd, out = rng.choice(all_runs)
            cases.append(Case(kind, name, {**shared_files(kind), **files}, cmd, out, f'{seed_name}: {what}'))
    return baselines, cases, per_kind


# An uninterrupted run of the journal's sweep: whatever a mutated journal holds, a resumed run that
# exits 0 must publish exactly this (damaged records dropped and computed again).
REFERENCE_H5 = os.path.join(WORK, 'journal', 'uninterrupted.h5')
COMPARE_H5 = os.path.join(REPO, 'test', 'python', 'compare_h5.py')


def make_journal():
    """A complete journal of three systems: a small sweep stopped by a file-size limit at its final
    write. Returns its bytes and the command that resumes it in a case's directory."""
    plain = ['--model', 'gpt3', '--strat', '1d', '--system', 'A100', '--nvs', '4,8,64', '--n-gpus', '32:128',
             '--top-n', '3', '-q']
    d = os.path.join(WORK, 'journal')
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    r = subprocess.run([tool('sweep'), *plain, '-o', os.path.join(d, 'out.h5')], env=ENV, capture_output=True,
                       preexec_fn=limited(24000), timeout=300)
    journal = os.path.join(d, 'out.h5.journal')
    assert r.returncode == 1 and os.path.exists(journal), (r.returncode, r.stderr[-2000:])
    r = subprocess.run([tool('sweep'), *plain, '-o', REFERENCE_H5], env=ENV, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return read(journal, 'rb'), [tool('sweep'), *plain, '-o', '{D}/out.h5', '--resume']


def make_sweep_files():
    """A plain sweep's file (two systems, the execution options' columns) and a hardware sweep's,
    which `report` reads: the report cases' seeds, each also a baseline."""
    d = os.path.join(WORK, 'report')
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    plain, grid = os.path.join(d, 'plain.h5'), os.path.join(d, 'grid.h5')
    for cmd in ([tool('sweep'), '--model', 'llama3_8b', '--system', 'H100', '--nvs', '4,8', '--n-gpus', '8,16',
                 '--global-batch-size', '64', '--runtime', 'megatron', '--recompute', 'none,full', '--top-n', '2',
                 '-q', '-o', plain],
                [tool('sweep'), '--sweep', os.path.join(REPO, 'test', 'python', 'data', 'hw_sweep_small.yaml'),
                 '--model', 'gpt3', '--n-gpus', '64,128', '--top-n', '2', '-q', '-o', grid]):
        r = subprocess.run(cmd, env=ENV, capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
    return [('plain.h5', read(plain, 'rb')), ('grid.h5', read(grid, 'rb'))]


def main():
    start = time.monotonic()
    shutil.rmtree(os.path.join(WORK, 'cases'), ignore_errors=True)
    os.makedirs(WORK, exist_ok=True)
    baselines, cases, _ = make_cases()
    if ARGS.only:
        wanted = set(ARGS.only.split(','))
        baselines = [c for c in baselines if c.name in wanted]
        cases = [c for c in cases if c.name in wanted]
        ARGS.keep = True
    print(f'fuzz: seed {ARGS.seed}, {len(baselines)} baselines, {len(cases)} mutated cases, timeout {ARGS.timeout:g} s, '
          f'time limit {ARGS.time_limit:g} s', flush=True)
    done = {}
    outcomes = {}
    failures = []
    stopped = False
    slowest = (0.0, None)
    with concurrent.futures.ThreadPoolExecutor(max_workers=ARGS.jobs) as pool:
        pending = set()
        queue = list(baselines) + list(cases)
        while queue or pending:
            while queue and len(pending) < ARGS.jobs and not stopped:
                if time.monotonic() - start > ARGS.time_limit:
                    stopped = True
                    break
                pending.add(pool.submit(run_case, queue.pop(0)))
            if stopped:
                queue = []
            if not pending:
                break
            finished, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in finished:
                case, failure, rc, seconds, last_line = fut.result()
                key = 'baseline' if case.name.startswith('base-') else case.kind
                done[key] = done.get(key, 0) + 1
                outcomes.setdefault(key, {}).setdefault(str(rc), 0)
                outcomes[key][str(rc)] += 1
                if seconds > slowest[0]:
                    slowest = (seconds, case.name)
                if ARGS.verbose:
                    print(f'{case.name} rc={rc} {seconds:.1f}s ({case.what}): {last_line}', flush=True)
                if failure:
                    failures.append(case.name)
                    print(f'FAIL  {case.name} ({case.kind}: {case.what})\n  {failure}\n  reproduce: '
                          f'{os.path.join(WORK, "cases", case.name, "REPRODUCE")}', flush=True)
    elapsed = time.monotonic() - start
    print('\ncases per input kind (exit codes):')
    for key in ['baseline'] + [k for k in done if k != 'baseline']:
        if key in done:
            codes = ', '.join(f'{c}: {n}' for c, n in sorted(outcomes[key].items()))
            print(f'  {key:12s} {done[key]:5d}   ({codes})')
    total = sum(done.values())
    print(f'{total} cases in {elapsed:.1f} s (slowest {slowest[0]:.1f} s: {slowest[1]}), {len(failures)} failed'
          + (f'; stopped at the time limit after {total} of {len(baselines) + len(cases)}' if stopped else ''))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
