#!/usr/bin/python3
"""`sweep` and `estimate` with a calibrated system (systems/A100-calibrated.yaml) against the
analytical one (systems/A100.yaml).

  test_calibrated_sweep.py SWEEP_BIN ESTIMATE_BIN REPO OUT_DIR

Runs a small 1d gpt3 sweep on each and checks:
  - every system group records its collective model: comm_model "analytical", or "calibrated:
    <file>" with the calibration file itself (calibration_yaml) and its FNV-1a hash;
  - the best configuration at each GPU count, run through `estimate --json` on both systems, has
    the same compute, memory and capacity figures on both (bit for bit), other collective times,
    and the sweep's own row values on its system; where both sweeps chose the same
    configuration, their rows agree on everything but communication;
  - a journal written with one calibration is refused when the calibration file's content
    changes, and resumed when it does not.
"""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys

import h5py

ARGS = ['--model', 'gpt3', '--strat', '1d', '--n-gpus', '64:1024', '--top-n', '3', '-q']
CONFIG_KEYS = ('dp', 'tp', 'pp', 'mbs')
NV_KEYS = ('nv_tp', 'nv_dp', 'nv_pp')
# Totals that do not depend on how collectives are timed.
NON_COMM = ('t_comp', 't_mem', 'mem', 'flops_per_gpu', 'wts_mem', 'wts_grad_mem', 'wts_optimizer_states_mem',
            'acts_mem')
# Totals compared between a sweep row and `estimate` on the same system.
ROW_STATS = NON_COMM + ('t', 't_tp_comm', 't_dp_comm', 't_pp_comm', 't_bubble')


def limit_file_size():
    """In the child: writes past 40 kB fail with EFBIG (SIGXFSZ ignored) as on a full disk."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (40000, 40000))


def run(cmd, **kw):
    print('$', ' '.join(cmd), flush=True)
    return subprocess.run(cmd, **kw)


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f'{h:016x}'


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def best_rows(group):
    """{n_gpus: {column: value}} of the rank-0 rows of a system group's top/ table."""
    top = group['top']
    cols = {k: top[k][()] for k in top.keys() if k != 'count'}
    out = {}
    for r, rank in enumerate(cols['rank']):
        if rank == 0:
            out[int(cols['n_gpus'][r])] = {k: v[r].item() for k, v in cols.items()}
    return out


def estimate(estimate_bin, system, row):
    cmd = [estimate_bin, '--json', '--model', 'gpt3', '--strat', '1d', '--system', system]
    for k in CONFIG_KEYS + NV_KEYS:
        cmd += ['--' + k.replace('_', '-'), str(int(row[k]))]
    return json.loads(run(cmd, check=True, capture_output=True, text=True).stdout)


def main(sweep_bin, estimate_bin, repo, out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    analytical_sys = os.path.join(repo, 'systems', 'A100.yaml')
    calibrated_sys = os.path.join(repo, 'systems', 'A100-calibrated.yaml')
    calibration_path = os.path.join(repo, 'systems', 'calibrations', 'perlmutter_a100.yaml')
    with open(calibration_path, 'rb') as f:
        calibration_bytes = f.read()
    files = {}
    for name, system in (('analytical', analytical_sys), ('calibrated', calibrated_sys)):
        files[name] = os.path.join(out, name + '.h5')
        run([sweep_bin, *ARGS, '--system', system, '-o', files[name]], check=True)

    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)
            print('FAIL:', what)

    with h5py.File(files['analytical'], 'r') as fa, h5py.File(files['calibrated'], 'r') as fc:
        ga, gc = fa['A100-NVS4'], fc['A100-calibrated-NVS4']
        check(text(ga.attrs['comm_model']) == 'analytical', 'analytical group: comm_model')
        check('calibration_yaml' not in ga.attrs, 'analytical group: no calibration_yaml')
        model = text(gc.attrs['comm_model'])
        check(model.startswith('calibrated: ') and model.endswith('perlmutter_a100.yaml'),
              f'calibrated group: comm_model {model!r}')
        check(text(gc.attrs['calibration_yaml']).encode() == calibration_bytes, 'calibration_yaml is the file')
        check(text(gc.attrs['calibration_fnv1a']) == fnv1a(calibration_bytes), 'calibration_fnv1a')
        # the same parameters; what describes the file (its calibration status, the paper's
        # caveat) differs with it
        check(text(gc.attrs['calibration_status']) == 'collectives calibrated, kernels uncalibrated (roofline)' and
              text(ga.attrs['calibration_status']) == 'uncalibrated (roofline)', 'calibration_status of each')
        for key, value in ga.attrs.items():
            if key not in ('name', 'comm_model', 'calibration_status', 'caveat'):
                check(gc.attrs[key] == value, f'system attribute {key}')
        provenance = text(fc['provenance/systems/A100-calibrated-NVS4.yaml'][()])
        check('calibration: "calibrations/perlmutter_a100.yaml"' in provenance, 'provenance names the calibration')

        best_a, best_c = best_rows(ga), best_rows(gc)
        check(len(best_c) >= 3 and set(best_a) == set(best_c), f'feasible GPU counts {sorted(best_a)} {sorted(best_c)}')
        comm_differs = 0
        same_config = 0
        for n in sorted(best_c):
            for label, rows in (('calibrated', best_c), ('analytical', best_a)):
                row = rows[n]
                ea = estimate(estimate_bin, analytical_sys, row)['totals']
                ec = estimate(estimate_bin, calibrated_sys, row)['totals']
                own = ec if label == 'calibrated' else ea
                where = f'{n} GPUs, {label} best {[int(row[k]) for k in CONFIG_KEYS + NV_KEYS]}'
                for k in ROW_STATS:
                    check(own[k] == row[k], f'{where}: sweep row {k} {row[k]!r} != estimate {own[k]!r}')
                for k in NON_COMM:
                    check(ea[k] == ec[k], f'{where}: {k} differs between the systems')
                check(ea['comm_model'] == 'analytical' and ea['calibrated_collectives'] == 0 and 'calibration' not in ea,
                      f'{where}: analytical estimate comm_model {ea["comm_model"]}')
                check(ec['comm_model'] in ('calibrated', 'mixed') and ec['calibrated_collectives'] > 0,
                      f'{where}: calibrated estimate comm_model {ec["comm_model"]}')
                check(ec.get('calibration', '').endswith('perlmutter_a100.yaml'), f'{where}: calibration path')
                comm_differs += (ea['t_tp_comm'] != ec['t_tp_comm']) + (ea['t_dp_comm'] != ec['t_dp_comm'])
            ra, rc = best_a[n], best_c[n]
            if all(ra[k] == rc[k] for k in CONFIG_KEYS + NV_KEYS):
                same_config += 1
                for k in NON_COMM:
                    check(ra[k] == rc[k], f'{n} GPUs, same configuration: {k} differs')
        check(comm_differs > 0, 'no collective time changed with the calibration')
        print(f'{len(best_c)} GPU counts, {same_config} with the same best configuration in both sweeps; '
              f'{comm_differs} TP/DP communication totals changed by the calibration')

    # Resume: a journal left by a failed write (files limited to 40 kB, which the journal fits in
    # and the output does not), then the same run with the calibration file changed (refused) and
    # unchanged (resumed).
    work = os.path.join(out, 'resume')
    os.makedirs(os.path.join(work, 'calibrations'))
    system = os.path.join(work, 'A100-calibrated.yaml')
    shutil.copy(calibrated_sys, system)
    cal_copy = os.path.join(work, 'calibrations', 'perlmutter_a100.yaml')
    shutil.copy(calibration_path, cal_copy)
    output = os.path.join(work, 'out.h5')
    first = run([sweep_bin, *ARGS, '--system', system, '-o', output], preexec_fn=limit_file_size,
                env=dict(os.environ, OMPI_MCA_btl='self', PMIX_MCA_gds='hash'))
    check(first.returncode != 0 and os.path.exists(output + '.journal'), 'a failed write leaves the journal')
    with open(cal_copy, 'ab') as f:
        f.write(b'# edited\n')
    refused = run([sweep_bin, *ARGS, '--system', system, '-o', output, '--resume'], capture_output=True, text=True)
    print(refused.stderr)
    check(refused.returncode == 2 and 'other inputs' in refused.stderr, 'a changed calibration is refused on resume')
    shutil.copy(calibration_path, cal_copy)
    resumed = run([sweep_bin, *ARGS[:-1], '--system', system, '-o', output, '--resume'], capture_output=True, text=True)
    check(resumed.returncode == 0 and 'resuming from' in resumed.stderr + resumed.stdout,
          'the same calibration resumes')
    check(os.path.isfile(output) and not os.path.exists(output + '.journal'), 'resumed run completes')

    print(f'{len(failures)} failures')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
