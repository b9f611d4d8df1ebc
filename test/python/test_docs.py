#!/usr/bin/python3
"""Runs every command and snippet of README.md and docs/*.md, so that the docs cannot drift.

    test_docs.py REPO BIN_DIR WORK [DOC...]

Code blocks (fenced, or indented by four spaces after a blank line) are classified:
  shell   lines that start with a command (build/bin/, scripts/, bash, /usr/bin/python3, mpirun,
          cmake, pvpython, xvfb-run, jupyter-nbconvert, VAR=...): run with bash in WORK/<doc>, a
          scratch directory holding links to the repository's inputs (scripts, sweeps, systems,
          models, runtimes, test) and to BIN_DIR as build/bin; docs/ and outputs/ are fresh there, so the
          commands cannot overwrite the repository's figures (python/ and pyproject.toml are
          linked too, for `pip install .`). A doc's blocks run in order and
          share that directory and one shell environment.
  python  a block with `import`: run with /usr/bin/python3 in the same directory.
  yaml    a block that parses as a YAML mapping or list (sweep and system files): parsed.
  output  a block after `<!-- docs-test: output -->` (log lines, file layouts): not run.
Anything else fails the test, so a new block is either run or explicitly marked. Inline code
spans that are whole commands of a tool (`estimate --model gpt3_1T --system A100 --tp 8`: the
tool's name and three or more flags, no `...` or alternatives) run too, as build/bin/TOOL. An HTML comment
before a block adjusts it without hiding it from the test:
  <!-- docs-test: sub OLD => NEW -->   replace text (a smaller input for a long run); repeatable
  <!-- docs-test: skip REASON -->      not run, and listed (only for what cannot run inside the
                                       test itself, e.g. scripts/test.sh, which runs this test)
"""
import os
import re
import shutil
import subprocess
import sys

import yaml

COMMAND = re.compile(r'^(build/bin/|scripts/|bash |/usr/bin/python3 |mpirun |cmake |pvpython |xvfb-run |'
                     r'jupyter-nbconvert |[A-Z_]+=\S* )')
MARK = re.compile(r'<!--\s*docs-test:\s*(\w+)\s*(.*?)\s*-->')
LINKS = ('scripts', 'sweeps', 'systems', 'models', 'runtimes', 'validation', 'test', 'python', 'pyproject.toml')
TOOLS = 'estimate|configs|sweep|comm|validate|perfsweep_bench|report'
INLINE = re.compile(r'`((?:' + TOOLS + r')(?: [a-z][a-z-]*)?(?: -[-a-z0-9]+(?: [^\s`-][^\s`]*)?){3,})`')


def inline_commands(text):
    """(line number, command) of every inline span that is a whole tool command."""
    out = []
    for no, line in enumerate(text.split('\n'), 1):
        for m in INLINE.finditer(line):
            if '...' not in m.group(1) and '\\|' not in m.group(1):
                out.append((no, 'build/bin/' + m.group(1)))
    return out


def blocks(text):
    """(line number, code, marks) of every code block; marks: list of (kind, argument)."""
    lines = text.split('\n')
    out, marks, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        m = MARK.search(line)
        if m:
            marks.append((m.group(1), m.group(2)))
            i += 1
            continue
        if line.startswith('```'):
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith('```'):
                body.append(lines[i])
                i += 1
            out.append((start, '\n'.join(body), marks))
            marks = []
            i += 1
            continue
        if line.startswith('    ') and line.strip() and (i == 0 or not lines[i - 1].strip()):
            start, body = i + 1, []
            while i < len(lines) and (lines[i].startswith('    ') or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            out.append((start, '\n'.join(body), marks))
            marks = []
            continue
        if line.strip() and not line.startswith('|'):
            marks = [mk for mk in marks if mk[0] != 'sub'] if False else marks
        i += 1
    return out


def classify(code, marks):
    kinds = [k for k, _ in marks]
    if 'inline' in kinds:
        return 'shell'
    if 'output' in kinds:
        return 'output'
    if 'skip' in kinds:
        return 'skip'
    first = next((ln.strip() for ln in code.splitlines() if ln.strip() and not ln.strip().startswith('#')), '')
    if re.search(r'^\s*(import|from) \w+', code, re.M):
        return 'python'
    if COMMAND.match(first):
        return 'shell'
    try:
        data = yaml.safe_load(code)
        if isinstance(data, (dict, list)):
            return 'yaml'
    except yaml.YAMLError:
        pass
    return None


OPTIONAL_TOOLS = ('xvfb-run', 'pvpython')


def scratch(work, name, repo, bin_dir):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, 'build'))
    os.makedirs(os.path.join(d, 'docs', 'figures'))
    os.makedirs(os.path.join(d, 'outputs'))
    for link in LINKS:
        os.symlink(os.path.join(repo, link), os.path.join(d, link))
    os.symlink(os.path.abspath(bin_dir), os.path.join(d, 'build', 'bin'))
    return d


def main(repo, bin_dir, work, *docs):
    repo = os.path.abspath(repo)
    docs = docs or ['README.md'] + sorted(os.path.join('docs', f) for f in os.listdir(os.path.join(repo, 'docs'))
                                          if f.endswith('.md'))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1', MPLBACKEND='Agg',
               OMPI_MCA_rmaps_base_oversubscribe='1', PERFSWEEP_DATA_DIR=repo)
    failed, counts, skipped = [], {}, []
    for doc in docs:
        with open(os.path.join(repo, doc)) as f:
            text = f.read()
        d = scratch(work, doc.replace('/', '_').replace('.md', ''), repo, bin_dir)
        state = os.path.join(d, '.env')  # the shell environment carried from block to block
        open(state, 'w').close()
        inline = [(no, cmd, [('inline', '')]) for no, cmd in inline_commands(text)]
        for line_no, code, marks in blocks(text) + inline:
            where = f'{doc}:{line_no}'
            kind = classify(code, marks)
            counts[kind] = counts.get(kind, 0) + 1
            for k, arg in marks:
                if k == 'sub':
                    old, new = (s.strip() for s in arg.split('=>', 1))
                    if old not in code:
                        failed.append(f'{where}: sub {old!r} matches nothing')
                    code = code.replace(old, new)
            if kind is None:
                failed.append(f'{where}: a code block that is neither a command, Python, YAML nor marked output:\n'
                              f'{code[:300]}')
                continue
            if kind == 'skip':
                skipped.append(f'{where}: {dict(marks)["skip"]}')
                continue
            # ParaView's commands need the optional packages (PERFSWEEP_WITH_PARAVIEW=1 scripts/setup.sh);
            # without them the block is listed as skipped, as ParaView's own tests skip.
            missing = [tool for tool in OPTIONAL_TOOLS if re.search(rf'(^|\s){tool}\s', code) and not shutil.which(tool)]
            if kind == 'shell' and missing:
                skipped.append(f'{where}: needs {", ".join(missing)} (not installed)')
                continue
            if kind in ('output', 'yaml'):
                continue
            if kind == 'shell':
                # set -a: a variable the block assigns (R=outputs/paper) reaches the next blocks too
                script = f'set -eo pipefail\nset -a\n. {state}\n{code}\n' \
                         f'export -p | grep -v -E " (PWD|OLDPWD|SHLVL|_)=" > {state}\n'
                cmd = ['bash', '-c', script]
            else:
                cmd = ['/usr/bin/python3', '-c', code]
            print(f'--- {where} ({kind})\n{code}', flush=True)
            p = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=900)
            if p.returncode != 0:
                failed.append(f'{where}: exit {p.returncode}\n{p.stdout[-1500:]}\n{p.stderr[-2500:]}')
                print(f'    FAILED (exit {p.returncode})')
    print(f'code blocks: {counts}')
    for s in skipped:
        print(f'skipped {s}')
    for f_ in failed:
        print(f'FAIL {f_}')
    return 1 if failed else 0


if __name__ == '__main__':
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
