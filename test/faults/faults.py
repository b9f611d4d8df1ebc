#!/usr/bin/python3
"""Fault injection for the tools (issue 15): each case provokes one fault, then checks the exit
code, the message, that no corrupt or half-written file sits under a final name, that earlier
results are intact and, once the fault is cleared, that --resume completes to output identical to
an uninterrupted run.

  faults.py CASE BIN_DIR REPO WORK_DIR [MPIEXEC]

A full disk is a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored: writes past it fail with EFBIG,
"File too large"), which needs neither root nor a mount. Exit 0: passed, 1: failed, 77: skipped.
"""
import fcntl
import hashlib
import os
import re
import resource
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import time

from journal_format import fnv1a

CASE, BIN, REPO, WORK = sys.argv[1:5]
MPIEXEC = sys.argv[5] if len(sys.argv) > 5 else None
COMPARE = os.path.join(REPO, 'test', 'python', 'compare_h5.py')
# Open MPI's shared-memory transport and PMIx store write files of several MB at start-up; a
# singleton run needs neither, and so starts under a small file-size limit.
ENV = dict(os.environ, OMPI_MCA_btl='self', PMIX_MCA_gds='hash', OMPI_ALLOW_RUN_AS_ROOT='1',
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1', PERFSWEEP_DATA_DIR=REPO)
# Three systems, three GPU counts: under a second, one journal record per system.
PLAIN = ['--model', 'gpt3', '--strat', '1d', '--system', 'A100', '--nvs', '4,8,64', '--n-gpus', '32:128',
         '--top-n', '3', '-q']
failures = []


def replaced(args, flag, value):
    """args with flag's value replaced (the tools take each option once)."""
    i = args.index(flag)
    return args[:i + 1] + [value] + args[i + 2:]


def tool(name):
    return os.path.join(BIN, name)


def check(ok, what):
    print(('ok    ' if ok else 'FAIL  ') + what, flush=True)
    if not ok:
        failures.append(what)


def limited(max_bytes):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))
    return apply


def run(args, limit=None, stdout=subprocess.PIPE, timeout=120):
    print('$', ' '.join(args) + (f'   [files limited to {limit} bytes]' if limit else ''), flush=True)
    r = subprocess.run(args, env=ENV, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=timeout,
                       preexec_fn=limited(limit) if limit else None)
    print(f'  rc={r.returncode}')
    log = (r.stdout or '') + r.stderr if stdout == subprocess.PIPE else r.stderr
    for line in log.strip().splitlines()[-6:]:
        print('  | ' + line)
    return r


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def same_h5(a, b):
    return subprocess.run([sys.executable, COMPARE, a, b]).returncode == 0


def leftovers(directory, final_names):
    """Files in directory other than the expected ones (temporaries, half-written outputs)."""
    return sorted(set(os.listdir(directory)) - set(final_names))


def fresh():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    return WORK


def reference(args, name='ref.h5'):
    ref = os.path.join(WORK, name)
    r = run([tool('sweep'), *args, '-o', ref])
    assert r.returncode == 0, 'the uninterrupted run failed'
    return ref


def resume_matches(args, out, ref):
    r = run([tool('sweep'), *args, '-o', out, '--resume'])
    check(r.returncode == 0, '--resume completes')
    check('did not re-evaluate' not in r.stderr, 'every intact journal record re-evaluates bit for bit')
    check(os.path.isfile(out) and same_h5(ref, out), '--resume output identical to an uninterrupted run')
    check(not any(os.path.exists(out + s) for s in ('.journal', '.partial', '.journal.lock')),
          'no journal, lock or temporary after the resumed run')


def case_full_disk_output():
    fresh()
    ref = reference(PLAIN)
    out = os.path.join(WORK, 'out.h5')
    assert run([tool('sweep'), *replaced(PLAIN, '--top-n', '2'), '-o', out]).returncode == 0
    earlier = read(out)
    r = run([tool('sweep'), *PLAIN, '-o', out], limit=24000)
    check(r.returncode == 1, 'a full disk at the final write exits 1')
    check('File too large' in r.stderr and 'out.h5' in r.stderr, 'the message names the file and the cause')
    check('--resume' in r.stderr, 'the message says how to continue')
    check(read(out) == earlier, 'the earlier output is intact')
    check(os.path.isfile(out + '.journal') and not os.path.exists(out + '.partial'),
          'the journal stays, the partial file is removed')
    resume_matches(PLAIN, out, ref)


def case_full_disk_journal():
    fresh()
    ref = reference(PLAIN)
    out = os.path.join(WORK, 'out.h5')
    r = run([tool('sweep'), *PLAIN, '-o', out], limit=1000)
    check(r.returncode == 1, 'a full disk while journaling exits 1')
    check('journal' in r.stderr and 'File too large' in r.stderr, 'the message names the journal and the cause')
    check(not os.path.exists(out) and not os.path.exists(out + '.partial'), 'no output, no partial file')
    resume_matches(PLAIN, out, ref)


def case_full_disk_mpi():
    """Two ranks under mpiexec (which restores SIGXFSZ's default action: the tool ignores it)."""
    if not MPIEXEC:
        sys.exit(77)
    fresh()
    ref = reference(PLAIN)
    out = os.path.join(WORK, 'out.h5')
    launch = [MPIEXEC, '-n', '2', '--oversubscribe', '--mca', 'btl', 'self,tcp', tool('sweep')]
    r = run([*launch, *PLAIN, '-o', out], limit=24000)
    check(r.returncode != 0 and 'File too large' in r.stderr, 'a full disk under mpiexec fails naming the cause')
    check(not os.path.exists(out) and not os.path.exists(out + '.partial') and os.path.exists(out + '.journal'),
          'no output, no partial file, the journal stays')
    r = run([*launch, *PLAIN, '-o', out, '--resume'])
    check(r.returncode == 0 and same_h5(ref, out), '--resume under mpiexec completes to identical output')


def case_kill_anytime():
    """SIGTERM or SIGKILL at points spread over a whole run (start-up, search, publishing): whatever
    the moment, the final name holds the earlier file or a complete new one, and --resume (or
    the finished run) ends with output identical to an uninterrupted run."""
    fresh()
    ref = reference(PLAIN)
    out = os.path.join(WORK, 'out.h5')
    assert run([tool('sweep'), *replaced(PLAIN, '--top-n', '2'), '-o', out]).returncode == 0
    earlier = read(out)
    t0 = time.time()
    run([tool('sweep'), *PLAIN, '-o', os.path.join(WORK, 'timing.h5')])
    duration = time.time() - t0
    for i, frac in enumerate((0.3, 0.6, 0.8, 0.9, 0.95, 0.98, 1.0, 1.02)):
        with open(out, 'wb') as f:
            f.write(earlier)
        for suffix in ('.journal', '.journal.lock', '.partial'):
            if os.path.exists(out + suffix):
                os.remove(out + suffix)
        sig = signal.SIGTERM if i % 2 == 0 else signal.SIGKILL
        proc = subprocess.Popen([tool('sweep'), *PLAIN, '-o', out], env=ENV, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(frac * duration)
        if proc.poll() is None:
            proc.send_signal(sig)
        proc.wait()
        final = read(out)
        complete = final != earlier and same_h5(ref, out)
        check(final == earlier or complete, f'{sig.name} at {frac:.2f} of the run: the final name holds the earlier '
                                            'file or a complete new one')
        if sig == signal.SIGTERM:
            check(not os.path.exists(out + '.partial'), f'{sig.name}: no partial file')
        if os.path.exists(out + '.journal'):
            r = run([tool('sweep'), *PLAIN, '-o', out, '--resume'])
            check(r.returncode == 0 and same_h5(ref, out), f'{sig.name} at {frac:.2f}: --resume completes identically')
        else:
            check(complete or final == earlier, f'{sig.name} at {frac:.2f}: finished, or stopped before journaling')


HW_GRID = ('base: {system: B200, nvs: 8}\naxes:\n  - hbm_capacity: [80, 192]\n'
           '  - hbm_bandwidth: [4000, 8000]\n')


def hw_args(spec):
    return ['--sweep', spec, '--model', 'gpt3', '--strat', '1d', '--n-gpus', '64,128', '--top-n', '2', '-q']


def case_full_disk_hw_sweep():
    fresh()
    spec = os.path.join(WORK, 'grid.yaml')
    with open(spec, 'w') as f:
        f.write(HW_GRID)
    args = hw_args(spec)
    ref = reference(args)
    out = os.path.join(WORK, 'out.h5')
    assert run([tool('sweep'), *replaced(args, '--top-n', '1'), '-o', out]).returncode == 0
    earlier_h5, earlier_xmf = read(out), read(os.path.join(WORK, 'out.xmf'))
    r = run([tool('sweep'), *args, '-o', out], limit=30000)
    check(r.returncode == 1 and 'File too large' in r.stderr and 'out.h5' in r.stderr,
          'a full disk at the final write exits 1 naming the .h5 and the cause')
    check(read(out) == earlier_h5 and read(os.path.join(WORK, 'out.xmf')) == earlier_xmf,
          'the earlier .h5 and .xmf are intact')
    check(leftovers(WORK, ['grid.yaml', 'ref.h5', 'ref.xmf', 'out.h5', 'out.xmf', 'out.h5.journal',
                           'out.h5.journal.lock']) == [], 'no partial .h5 or .xmf')
    resume_matches(args, out, ref)
    check(read(os.path.join(WORK, 'out.xmf')) == sidecar_of(os.path.join(WORK, 'ref.h5'), out),
          "the resumed .xmf equals the uninterrupted one (but for the .h5's name and hash)")


def sidecar_of(ref_h5, h5):
    """The .xmf that `h5` should have: ref_h5's, naming h5 and recording its SHA-256."""
    text = read(os.path.splitext(ref_h5)[0] + '.xmf')
    text = text.replace(os.path.basename(ref_h5).encode(), os.path.basename(h5).encode())
    return re.sub(rb'(<Information Name="h5_sha256" Value=")[0-9a-f]{64}', lambda m: m.group(1) + sha256(h5).encode(),
                  text)


def sha256(path):
    return hashlib.sha256(read(path)).hexdigest()


def case_concurrent():
    fresh()
    out = os.path.join(WORK, 'out.h5')
    # A lock held by another process (this one): refused, naming the holder.
    lock_path = out + '.journal.lock'
    with open(lock_path, 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write(f'host {socket.gethostname()}, pid {os.getpid()}\n')
        lock.flush()
        r = run([tool('sweep'), *PLAIN, '-o', out])
        check(r.returncode == 1 and 'locked by another run' in r.stderr and f'pid {os.getpid()}' in r.stderr,
              'a second run on a locked output is refused, naming the first (host, pid)')
        check(not os.path.exists(out + '.journal') and not os.path.exists(out), 'the refused run wrote nothing')
    os.remove(lock_path)
    # Two real runs: the first is stopped (SIGSTOP) once it holds the output; the second, with
    # other inputs, is refused; the first then completes normally.
    big = ['--model', 'gpt3_1T', '--strat', '2d', '--system', 'B200', '--nvs', '4,8,64', '--n-gpus', '64:16384', '-q']
    ref = reference(big)
    for attempt in range(3):
        first = subprocess.Popen([tool('sweep'), *big, '-o', out], env=ENV, stderr=subprocess.PIPE, text=True)
        while first.poll() is None and not os.path.exists(out + '.journal'):
            time.sleep(0.001)
        if first.poll() is None:
            break
        first.wait()
        os.remove(out)
    else:
        print('the first run always finished before it could be stopped; skipped')
        sys.exit(77)
    os.kill(first.pid, signal.SIGSTOP)
    try:
        r = run([tool('sweep'), *PLAIN, '-o', out])
        check(r.returncode == 1 and f'pid {first.pid}' in r.stderr, 'a concurrent run is refused, naming the first')
        r = run([tool('sweep'), *big, '-o', out, '--resume'])
        check(r.returncode == 1 and 'locked by another run' in r.stderr, 'a concurrent --resume is refused too')
    finally:
        os.kill(first.pid, signal.SIGCONT)
    first.wait()
    check(first.returncode == 0, 'the first run completes')
    check(same_h5(ref, out), "the first run's output is its own (identical to an undisturbed run)")


def case_symlink():
    fresh()
    out = os.path.join(WORK, 'out.h5')
    victim = os.path.join(WORK, 'victim.txt')
    with open(victim, 'w') as f:
        f.write('precious\n')
    os.symlink(victim, out + '.journal')
    for extra in ([], ['--resume'], ['--restart']):
        r = run([tool('sweep'), *PLAIN, '-o', out, *extra])
        check(r.returncode == 2 and 'symbolic link' in r.stderr, f'a symlinked journal is refused {extra}')
    os.remove(out + '.journal')
    os.symlink(victim, out)
    r = run([tool('sweep'), *PLAIN, '-o', out])
    check(r.returncode == 2 and 'symbolic link' in r.stderr, 'a symlinked output is refused')
    check(read(victim) == b'precious\n', 'the symlinks\' target is untouched')


def case_fifo():
    fresh()
    out = os.path.join(WORK, 'out.h5')
    os.mkfifo(out + '.journal')
    for extra in ([], ['--resume']):
        try:
            r = run([tool('sweep'), *PLAIN, '-o', out, *extra], timeout=60)
        except subprocess.TimeoutExpired:
            check(False, 'a FIFO journal hangs the run')
            return
        check(r.returncode == 2 and 'FIFO' in r.stderr, f'a FIFO journal is refused {extra}')
    os.remove(out + '.journal')
    os.mkfifo(out)
    r = run([tool('sweep'), *PLAIN, '-o', out], timeout=60)
    check(r.returncode == 2 and 'FIFO' in r.stderr, 'a FIFO output is refused')


def case_bad_numbers():
    fresh()
    sweep, configs, estimate = tool('sweep'), tool('configs'), tool('estimate')
    base = ['--model', 'gpt3', '--system', 'A100', '-q', '-o', os.path.join(WORK, 'x.h5')]
    big_grid = os.path.join(WORK, 'big.yaml')
    with open(big_grid, 'w') as f:
        f.write('base: {system: B200, nvs: 8}\naxes:\n  - hbm_capacity: {linspace: [80, 1000, 3000]}\n'
                '  - hbm_bandwidth: {linspace: [500, 16000, 3000]}\n')
    small_grid = os.path.join(WORK, 'small.yaml')
    with open(small_grid, 'w') as f:
        f.write(HW_GRID)
    tiny_bw = os.path.join(WORK, 'tiny_bw.yaml')
    with open(os.path.join(REPO, 'systems', 'A100.yaml')) as f:
        text = ''.join(l for l in f if not l.startswith('hbm_bandwidth:') and not l.startswith('name:'))
    with open(tiny_bw, 'w') as f:
        f.write(text + 'hbm_bandwidth: 1e-308\n')
    os.makedirs(os.path.join(WORK, 'adir.h5'))
    cases = [
        ([sweep, *base, '--n-gpus', '4:4611686018427387904'], '--n-gpus (range end) must be at most'),
        ([sweep, *base, '--n-gpus', '9223372036854775807'], '--n-gpus must be at most'),
        ([sweep, *base, '--global-batch-size', '9223372036854775807'], '--global-batch-size must be at most'),
        ([sweep, *base, '--top-n', '100000000'], '--top-n must be at most'),
        ([sweep, *base, '--n-gpus', '8,16,8'], '--n-gpus lists 8 twice'),
        ([sweep, *base, '--nvs', '4,1073741824'], '--nvs must be at most 65536'),
        ([sweep, '--sweep', small_grid, '--model', 'gpt3', '--n-gpus', '64,64', '-o', os.path.join(WORK, 'g.h5')],
         '--n-gpus lists 64 twice'),
        ([sweep, '--sweep', big_grid, '--model', 'gpt3', '-o', os.path.join(WORK, 'g.h5')], '--max-points'),
        ([sweep, *base, '--n-gpus', '8:1024', '--top-n', '100000', '--max-output-gb', '0.001'], '--max-output-gb'),
        ([sweep, '--model', 'gpt3', '--system', 'A100', '-o', os.path.join(WORK, 'adir.h5')], 'is a directory'),
        ([sweep, '--model', 'gpt3', '--system', tiny_bw, '-o', os.path.join(WORK, 'y.h5')],
         tiny_bw + ': hbm_bandwidth must be in [0.001, 1e+09] GB/s, got 1e-308'),
        ([configs, '--n-gpus', '64', '--tp', '1:4611686018427387904'], '--tp (range end) must be at most'),
        ([configs, '--n-gpus', '9223372036854775807'], '--n-gpus must be at most'),
        ([configs, '--n-gpus', '64', '--global-batch-size', '9223372036854775807'], '--global-batch-size must be at most'),
        ([estimate, '--model', 'gpt3', '--dp', '4611686018427387904', '--pp', '4'], '--dp must be at most'),
        ([estimate, '--model', 'gpt3', '--dp', '65536', '--pp', '65536'], 'multiply to more than'),
        ([estimate, '--model', 'gpt3', '--system', tiny_bw], 'hbm_bandwidth must be in [0.001, 1e+09] GB/s'),
    ]
    for args, expect in cases:
        t0 = time.time()
        r = run(args, timeout=60)
        check(r.returncode == 2 and expect in r.stderr, f'refused with exit 2 and "{expect}"')
    check(not os.path.exists(os.path.join(WORK, 'x.h5.journal')), 'no journal left by a refused run')
    # A model whose name would leave the output folder writes inside it.
    evil = os.path.join(WORK, 'evil.yaml')
    with open(os.path.join(REPO, 'models', 'gpt3.yaml')) as f:
        text = ''.join(l for l in f if not l.startswith('name:'))
    with open(evil, 'w') as f:
        f.write(text + 'name: ../../escaped\n')
    outdir = os.path.join(WORK, 'outputs')
    r = run([sweep, '--model', evil, '--system', 'A100', '--n-gpus', '32', '-q', '--out', outdir])
    made = os.listdir(outdir) if os.path.isdir(outdir) else []
    check(r.returncode == 0 and len(made) == 1 and made[0].endswith('escaped_A100.h5') and '/' not in made[0],
          f'a model name with "/" and ".." stays inside --out ({made})')
    check(not os.path.exists(os.path.join(WORK, 'escaped.h5')) and not os.path.exists(os.path.join(REPO, 'escaped.h5')),
          'nothing written outside --out')
    # A sweep file's relative system path resolves against the sweep file's folder.
    sub = os.path.join(WORK, 'sub')
    os.makedirs(sub)
    shutil.copy(os.path.join(REPO, 'systems', 'B200.yaml'), os.path.join(sub, 'mine.yaml'))
    rel = os.path.join(sub, 'rel.yaml')
    with open(rel, 'w') as f:
        f.write(HW_GRID.replace('system: B200', 'system: ./mine.yaml'))
    r = run([sweep, '--sweep', rel, '--model', 'gpt3', '--n-gpus', '64', '--dry-run'], stdout=subprocess.DEVNULL)
    check(r.returncode == 0, 'base.system ./mine.yaml is found next to the sweep file')


def record_offsets(data):
    """Where each record of a journal starts: after the header (magic, fingerprint length,
    fingerprint, its hash), each is magic (4 bytes), fingerprint hash, payload length, payload and
    checksum (8 bytes each)."""
    pos = 8 + 8 + int.from_bytes(data[8:16], 'little') + 8
    records = []
    while pos < len(data):
        records.append(pos)
        pos += 4 + 8 + 8 + int.from_bytes(data[pos + 12:pos + 20], 'little') + 8
    assert len(records) == 3, records
    return records


def corrupt_middle_record(path):
    data = bytearray(read(path))
    records = record_offsets(data)
    data[records[1] + 4 + 8 + 8 + 16] ^= 0xFF  # a byte of the second record's payload
    with open(path, 'wb') as f:
        f.write(data)


def interrupted_run():
    """An uninterrupted run's output, and out.h5 of a run stopped by a full disk at the final
    write, which leaves a complete journal of three records."""
    fresh()
    ref = reference(PLAIN)
    out = os.path.join(WORK, 'out.h5')
    r = run([tool('sweep'), *PLAIN, '-o', out], limit=24000)
    assert r.returncode == 1 and os.path.exists(out + '.journal')
    return ref, out


def case_damaged_journal():
    ref, out = interrupted_run()
    corrupt_middle_record(out + '.journal')
    r = run([tool('sweep'), *PLAIN, '-o', out, '--resume'])
    check(r.returncode == 0 and '2 records kept, 1 damaged' in r.stdout + r.stderr,
          'a damaged record in the middle is reported (records kept and dropped)')
    check(same_h5(ref, out), 'the resumed output is identical to an uninterrupted run')


def alter_middle_record(path):
    """The second record with its first kept configuration's throughput raised by a millionth and
    its checksum recomputed: every field still in range, the record intact but for its meaning."""
    data = bytearray(read(path))
    rec = record_offsets(data)[1]
    length = int.from_bytes(data[rec + 12:rec + 20], 'little')
    payload = bytearray(data[rec + 20:rec + 20 + length])
    # payload: target id, the 9 int64 counters of SearchCounters (search/search.hpp), number of
    # GPU counts, then per GPU count its number of kept configurations and those (throughput first)
    q = 8 + 9 * 8
    n_tops = int.from_bytes(payload[q:q + 8], 'little')
    q += 8
    for _ in range(n_tops):
        count = int.from_bytes(payload[q:q + 8], 'little')
        q += 8
        if count:
            break
    else:
        raise AssertionError('the record keeps no configuration')
    (throughput,) = struct.unpack_from('<d', payload, q)
    struct.pack_into('<d', payload, q, throughput * 1.000001)
    data[rec + 20:rec + 20 + length] = payload
    fingerprint = bytes(data[rec + 4:rec + 12])
    data[rec + 20 + length:rec + 28 + length] = fnv1a(fingerprint + bytes(payload)).to_bytes(8, 'little')
    with open(path, 'wb') as f:
        f.write(data)


def case_altered_journal():
    ref, out = interrupted_run()
    alter_middle_record(out + '.journal')
    r = run([tool('sweep'), *PLAIN, '-o', out, '--resume'])
    log = r.stdout + r.stderr
    check(r.returncode == 0 and '1 of 3 journal records did not re-evaluate bit for bit' in log,
          'a record altered under a recomputed checksum is dropped, and the run says so')
    check(same_h5(ref, out), 'the resumed output is identical to an uninterrupted run')


# A search over a list of every searched execution option under a runtime (recompute, ZeRO,
# interleaving, schedules, precision, context parallelism and its exchange, offload and its share,
# the rank order),
# whose records hold configurations of each.
EVERY_OPTION = ['--model', 'llama3_8b', '--strat', '1d', '--system', 'H100', '--nvs', '4,8', '--n-gpus', '16:64',
                '--global-batch-size', '256', '--runtime', 'megatron', '--recompute', 'none,full', '--zero', '0,1',
                '--interleave', '1,2', '--schedule', '1f1b,zb-h1,dualpipe', '--precision', 'bf16,fp8',
                '--cp', '1,2', '--cp-comm', 'p2p,all-gather', '--offload', 'none,optimizer',
                '--offload-percent', '50,100', '--rank-order', 'tp-cp-ep-dp-pp,tp-cp-ep-pp-dp', '--top-n', '3',
                '-q']


def resumes_every_record(args, what):
    """A run of `args` stopped at its final write resumes every journal record (`what`, recomputing
    none) and writes the uninterrupted run's file."""
    fresh()
    ref = reference(args)
    out = os.path.join(WORK, 'out.h5')
    r = run([tool('sweep'), *args, '-o', out], limit=30000)
    assert r.returncode == 1 and os.path.exists(out + '.journal'), 'the run was not stopped at its final write'
    r = run([tool('sweep'), *args, '-o', out, '--resume'])
    check(r.returncode == 0 and 'did not re-evaluate' not in r.stdout + r.stderr, what)
    check(same_h5(ref, out), 'the resumed output is identical to an uninterrupted run')


def case_resume_every_option():
    resumes_every_record(EVERY_OPTION,
                         'every intact record of a search over every option list is resumed, none recomputed')


# nanotron's runtime partitions the pipeline stages itself: 12 and 24 GPUs try pp 3 and 6 on llama3_8b's
# 32 blocks; the systems on NVLink domains of 4 and 8 make two journal records.
NANOTRON_STAGES = ['--model', 'llama3_8b', '--strat', '1d', '--system', 'hf_h100', '--nvs', '4,8', '--n-gpus',
                   '8,12,24', '--global-batch-size', '48', '--runtime', 'nanotron', '--zero', '0,1', '--top-n', '3',
                   '-q']


def case_resume_nanotron_stages():
    resumes_every_record(NANOTRON_STAGES,
                         "every record of a search under nanotron's stage partition is resumed, none recomputed")


def case_journal_kept():
    fresh()
    ref = reference(PLAIN)
    out = os.path.join(WORK, 'out.h5')
    assert run([tool('sweep'), *PLAIN, '-o', out], limit=24000).returncode == 1
    journal = read(out + '.journal')
    r = run([tool('sweep'), *PLAIN, '-o', out])
    check(r.returncode == 2 and '--resume' in r.stderr and '--restart' in r.stderr,
          'a journal of the same run without --resume is refused with the commands to resume or restart')
    check(read(out + '.journal') == journal, 'the journal is not truncated')
    r = run([tool('sweep'), *replaced(PLAIN, '--top-n', '2'), '-o', out])
    check(r.returncode == 2 and '--restart' in r.stderr and read(out + '.journal') == journal,
          'a journal of other inputs is refused without --resume, and kept')
    r = run([tool('sweep'), *PLAIN, '-o', out, '--restart'])
    check(r.returncode == 0 and same_h5(ref, out), '--restart starts over and completes')


def case_stdout_full():
    if not os.path.exists('/dev/full'):
        sys.exit(77)
    fresh()
    cases = [
        [tool('estimate'), '--model', 'gpt3', '--system', 'A100', '--dp', '8', '--tp', '4', '--pp', '4',
         '--global-batch-size', '512', '--json'],
        [tool('estimate'), '--model', 'gpt3', '--system', 'A100', '--dp', '8', '--tp', '4', '--pp', '4', '--csv'],
        [tool('configs'), '--n-gpus', '64', '--model', 'gpt3'],
        [tool('configs'), '--n-gpus', '64', '--model', 'gpt3', '--csv'],
        [tool('comm'), 'validate', '-m', os.path.join(REPO, 'test', 'data', 'nccl_tests_perlmutter.csv'),
         '--system', 'A100'],
        [tool('sweep'), *PLAIN, '--dry-run'],
    ]
    with open('/dev/full', 'w') as full:
        for args in cases:
            r = run(args, stdout=full)
            check(r.returncode == 1 and 'No space left on device' in r.stderr,
                  f'{os.path.basename(args[0])} to a full stdout exits 1 naming the cause')


def case_no_temporaries():
    fresh()
    cal = os.path.join(WORK, 'cal.yaml')
    r = run([tool('comm'), '-q', 'fit', '-m', os.path.join(REPO, 'test', 'data', 'nccl_tests_perlmutter.csv'),
             '-o', cal], limit=2000)
    check(r.returncode != 0 and 'File too large' in r.stderr, 'comm fit on a full disk fails naming the cause')
    csv = os.path.join(WORK, 'c.csv')
    r = run([tool('configs'), '--n-gpus', '64', '--model', 'gpt3', '-o', csv], limit=2000)
    check(r.returncode == 1 and 'File too large' in r.stderr, 'configs -o on a full disk exits 1 naming the cause')
    check(leftovers(WORK, []) == [], f'no temporaries left ({leftovers(WORK, [])})')


if __name__ == '__main__':
    globals()['case_' + CASE]()
    print(f'{len(failures)} failures' + (': ' + '; '.join(failures) if failures else ''))
    sys.exit(1 if failures else 0)
