#!/usr/bin/python3
"""The .h5/.xmf pair of a hardware sweep commits as one unit (docs/robustness.md, Publishing):
a small sweep publishes over an existing pair while strace fails, or kills the tool at, each
syscall that touches the output's files or their folder (open, write, fsync, link, rename,
unlink), one occurrence at a time.

  publish_pair.py BIN_DIR REPO WORK_DIR

After an injected error: the exit code is not 0 unless the new pair is in place, and the pair on
disk is the earlier one or the new one. After an injected SIGKILL: the pair is the earlier one, the
new one, or (killed between the two renames) the new .h5 beside the earlier .xmf, which the
sidecar's recorded SHA-256 exposes to readers. Either way `--resume` then publishes the pair an
uninterrupted run publishes, and leaves no temporary. Exit 0: passed, 1: failed, 77: skipped (no
strace, or ptrace not permitted).
"""
import os
import re
import shutil
import subprocess
import sys

BIN, REPO, WORK = sys.argv[1:4]
sys.path.insert(0, os.path.join(REPO, 'python'))
from perfsweep.h5 import check_sidecar  # noqa: E402

COMPARE = os.path.join(REPO, 'test', 'python', 'compare_h5.py')
ENV = dict(os.environ, OMPI_MCA_btl='self', PMIX_MCA_gds='hash', OMPI_ALLOW_RUN_AS_ROOT='1',
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1', PERFSWEEP_DATA_DIR=REPO)
GRID = 'base: {system: B200, nvs: 8}\naxes:\n  - hbm_capacity: [80, 192]\n  - hbm_bandwidth: [4000, 8000]\n'
# The syscalls of publishing, as glibc makes them on Linux (either spelling of each).
TRACED = 'open,openat,write,fsync,fdatasync,link,linkat,rename,renameat,renameat2,unlink,unlinkat'
failures = []


def check(ok, what):
    print(('ok    ' if ok else 'FAIL  ') + what, flush=True)
    if not ok:
        failures.append(what)


def read(path):
    try:
        with open(path, 'rb') as f:
            return f.read()
    except FileNotFoundError:
        return None


def sweep_args(spec, out, *extra):
    return [os.path.join(BIN, 'sweep'), '--sweep', spec, '--model', 'gpt3', '--strat', '1d', '--top-n', '2', '-q',
            '-o', out, *extra]


def run(args, quiet=False):
    r = subprocess.run(args, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if not quiet:
        print('$', ' '.join(args), f'\n  rc={r.returncode}')
        for line in r.stderr.strip().splitlines()[-3:]:
            print('  | ' + line)
    return r


def strace(paths, log, inject=None):
    """strace limited to the syscalls of TRACED that touch `paths` (-P; an fd counts by its path):
    the injection's occurrence count runs over those alone."""
    cmd = ['strace', '-f', '-qq', '-e', 'signal=none', '-e', 'trace=' + TRACED, '-o', log]
    for p in paths:
        cmd += ['-P', p]
    if inject:
        cmd += ['-e', 'inject=' + inject]
    return cmd


def same_h5(a, b):
    return subprocess.run([sys.executable, COMPARE, a, b], stdout=subprocess.DEVNULL).returncode == 0


def pair_matches(out):
    try:
        check_sidecar(out)
        return True
    except (OSError, ValueError):
        return False


def main():
    if shutil.which('strace') is None:
        print('strace is not installed: skipped')
        return 77
    probe = subprocess.run(['strace', '-qq', '-o', os.devnull, 'true'], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f'strace cannot trace here (ptrace not permitted?): {probe.stderr.strip()}: skipped')
        return 77
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    work = os.path.abspath(WORK)
    spec = os.path.join(work, 'grid.yaml')
    with open(spec, 'w') as f:
        f.write(GRID)
    out, xmf = os.path.join(work, 'out.h5'), os.path.join(work, 'out.xmf')
    ref = os.path.join(work, 'ref.h5')
    assert run(sweep_args(spec, ref, '--n-gpus', '64,128')).returncode == 0, 'the uninterrupted run failed'
    # The earlier pair: other GPU counts, so that its .xmf names arrays the new .h5 does not have.
    assert run(sweep_args(spec, out, '--n-gpus', '64')).returncode == 0, 'the earlier run failed'
    old_h5, old_xmf = read(out), read(xmf)
    new_args = sweep_args(spec, out, '--n-gpus', '64,128')
    paths = [out, out + '.partial', xmf, xmf + '.partial', out + '.previous', work]
    log = os.path.join(work, 'strace.log')

    def reset():
        for name in os.listdir(work):
            if name.startswith('out.'):
                os.remove(os.path.join(work, name))
        with open(out, 'wb') as f:
            f.write(old_h5)
        with open(xmf, 'wb') as f:
            f.write(old_xmf)

    # Every occurrence of each traced syscall in a clean run of the main process (the one publishing).
    reset()
    r = run(strace(paths, log) + new_args)
    assert r.returncode == 0, 'the traced run failed'
    counts = {}
    first_pid = None
    for line in open(log):
        m = re.match(r'(\d+)\s+(\w+)\(', line)
        if not m:
            continue
        first_pid = first_pid or m.group(1)
        if m.group(1) == first_pid:
            counts[m.group(2)] = counts.get(m.group(2), 0) + 1
    print('syscalls touching the output files:', ', '.join(f'{k} x{v}' for k, v in sorted(counts.items())))
    check(counts.get('rename', 0) + counts.get('renameat', 0) + counts.get('renameat2', 0) >= 2,
          'the clean run renames at least twice (.h5, .xmf)')

    tally = {'error': 0, 'kill': 0}
    outcome = {'earlier pair': 0, 'new pair': 0, 'new .h5, earlier .xmf (detected)': 0}
    for name, count in sorted(counts.items()):
        for n in range(1, count + 1):
            for mode, spec_inject in (('error', f'{name}:error=EIO:when={n}'),
                                      ('kill', f'{name}:signal=SIGKILL:when={n}')):
                reset()
                r = run(strace(paths, log, spec_inject) + new_args, quiet=True)
                h5, sidecar = read(out), read(xmf)
                earlier = h5 == old_h5 and sidecar == old_xmf
                new = h5 is not None and h5 != old_h5 and pair_matches(out) and same_h5(ref, out)
                mismatch = (mode == 'kill' and h5 is not None and h5 != old_h5 and sidecar == old_xmf and
                            not pair_matches(out) and same_h5(ref, out))
                what = f'{mode} at {name} #{n} (rc={r.returncode})'
                state = ('earlier pair' if earlier else 'new pair' if new else
                         'new .h5, earlier .xmf (detected)' if mismatch else None)
                check(state is not None, f'{what}: {state or "an inconsistent pair"} on disk')
                if state:
                    outcome[state] += 1
                if mode == 'error':
                    check(r.returncode != 0 or new, f'{what}: exit 0 only with the new pair published')
                    if r.returncode != 0 and 'sweep: error' not in r.stderr:
                        check(False, f'{what}: the failure is reported ({r.stderr.strip()[-200:]})')
                tally[mode] += 1
                if r.returncode == 0:
                    continue
                # the journal keeps the finished points: --resume publishes the uninterrupted run's pair
                rr = run(new_args + ['--resume'], quiet=True)
                left = sorted(f for f in os.listdir(work) if f.startswith('out.') and f not in ('out.h5', 'out.xmf'))
                check(rr.returncode == 0 and pair_matches(out) and same_h5(ref, out) and not left,
                      f'{what}: --resume then publishes the new pair (rc={rr.returncode}, left: {left})')
    print(f'{tally["error"]} errors and {tally["kill"]} kills injected; afterwards: ' +
          ', '.join(f'{v} {k}' for k, v in outcome.items()))
    if failures:
        print(f'{len(failures)} failed')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
