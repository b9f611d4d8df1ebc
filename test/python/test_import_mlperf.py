#!/usr/bin/python3
"""scripts/import_mlperf.py on test/data/mlperf_excerpt: a small part of one real MLPerf Training
submission (v4.1, NVIDIA, system eos_n64_ngc24.09_nemo, GPT-3 175B: its systems json, the README
naming its launch config, the config and the two files it sources, the NeMo YAML lines whose
defaults it reads, and two of its three result logs trimmed to 25 lines each). Every column of the
one output row is checked against a value worked out by hand from those files (the derivations are
the comments below); none is copied from the importer's output.

usage: test_import_mlperf.py SOURCE_DIR
"""
import csv
import importlib.util
import io
import math
import os
import subprocess
import sys

SOURCE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(SOURCE, 'scripts', 'import_mlperf.py')
EXCERPT = os.path.join(SOURCE, 'test', 'data', 'mlperf_excerpt', 'training_results_v4.1')
SUB = 'NVIDIA/benchmarks/gpt3/implementations/eos_n64_ngc24.09_nemo'
FAILURES = []


def check(ok, what):
    print(('ok    ' if ok else 'FAIL  ') + what)
    if not ok:
        FAILURES.append(what)


# ---- the row, by hand ---------------------------------------------------------------------------
# Step time: the logs' tracked_stats "train_step_timing in s", the first logged step of each log
# dropped (log 0: 9.360885620117188; log 1: 9.547734260559082), the rest pooled:
#   log 0: 9.483275413513184 9.491189002990723 9.495534896850586 9.493833541870117
#          9.498929977416992 9.50925064086914 9.513280868530273
#   log 1: 9.582978248596191 9.579153060913086 9.627310752868652 9.637850761413574
#          9.597637176513672 9.560283660888672 9.561588287353516
#   sorted, 14 values: 9.4833 9.4912 9.4938 9.4955 9.4989 9.5093 [9.513280868530273
#          9.560283660888672] 9.5616 9.5792 9.5830 9.5976 9.6273 9.6379
#   median = (9.513280868530273 + 9.560283660888672) / 2 = 9.536782264709473
# (the "validation_step_timing in s" line of each log and the final "throughput" line are not
# step times.)
STEP_S = (9.513280868530273 + 9.560283660888672) / 2
# samples_per_s = gbs / step_s = 2048 / 9.536782264709473 = 214.7475
# time_to_train_min: run_stop - run_start of each log (status success), in minutes; fewer than 3
# logs, so their mean (MLPerf's olympic mean needs 3):
#   log 0: (1727899633389 - 1727896646904) / 60000 = 2986485 / 60000 = 49.77475
#   log 1: (1727899868273 - 1727896657439) / 60000 = 3210834 / 60000 = 53.5139
#   mean = (49.77475 + 53.5139) / 2 = 51.644325
TTT = (49.77475 + 53.5139) / 2
EXPECTED = {
    # training_results_v4.1 in the path; submitter, system and benchmark from
    # NVIDIA/results/eos_n64_ngc24.09_nemo/gpt3/result_*.txt
    'id': 'v4.1_nvidia_eos_n64_ngc24.09_nemo_gpt3',
    'round': 'v4.1',
    'submitter': 'NVIDIA',
    'system': 'eos_n64_ngc24.09_nemo',
    'benchmark': 'gpt3',
    'perfsweep_model': 'gpt3',                 # GPT-3 175B is models/gpt3.yaml
    # systems json: "accelerator_model_name": "NVIDIA H100-SXM5-80GB"
    'gpu': 'H100',
    # "accelerator_memory_capacity": "81559 MiB" -> 81559 / 1024 = 79.647 GiB -> 79.6
    'gpu_memory_gb': '79.6',
    # "number_of_nodes": "64", "accelerators_per_node": "8" -> 64 x 8 = 512
    'gpus': '512', 'nodes': '64', 'gpus_per_node': '8',
    # an HGX/DGX H100 board: 8 GPUs on one NVSwitch
    'nvlink_domain': '8',
    # "host_networking": "Storage: 2x ..., Compute: 8x ConnectX-7 IB NDR 400Gb/s, ..." -> the
    # Compute part: 8 NICs of 400 Gb/s
    'nics_per_node': '8', 'nic_gbps': '400',
    # "framework": "NVIDIA NeMo Framework Release 24.09"
    'framework': 'nemo/megatron-core 24.09',
    # config_fp8.sh: FP8=True, FP8_AMAX_HISTORY=1024, FP8_AMAX_ALGO="max", no FP8_RECIPE:
    # Transformer Engine's delayed scaling
    'precision': 'fp8', 'fp8_recipe': 'delayed',
    # config_common.sh: export FP8_PARAMS=True (NeMo's fp8_params)
    'fp8_params': 'true',
    # config_DGXH100_64x8x128x4x8_mbs2.sh: TENSOR_MODEL_PARALLEL=4, PIPELINE_MODEL_PARALLEL=8,
    # INTERLEAVED_PIPELINE=6 (the YAML's default 12 not used), no CONTEXT_PARALLEL, no expert axis
    'tp': '4', 'pp': '8', 'vp': '6', 'cp': '1', 'ep': '1',
    # dp = 512 / (4 * 8 * 1) = 16
    'dp': '16',
    # MICRO_BATCH_SIZE=2 (config_common.sh sets 2, the config sets 2 again after sourcing it)
    'mbs': '2',
    # the logs' global_batch_size 2048 (= MINIBS 128 x dp 16) and max_sequence_length 2048
    'gbs': '2048', 'seq_len': '2048',
    # SEQ_PARALLEL unset -> custom.yaml default True (tp 4 > 1); TP_COMM_OVERLAP=True;
    # LAYER_CUDA_GRAPH unset -> default False; ACT_CKPT_GRANULARITY unset -> default null
    'sequence_parallel': 'true', 'tp_comm_overlap': 'true',
    # TP_PP_DP_MAPPING unset: Megatron-Core's default order
    'rank_order': 'tp-cp-ep-dp-pp', 'cuda_graphs': 'false',
    'activation_recompute': 'none',
    'step_s': STEP_S,
    'step_s_method': 'median of 14 logged per-step times (tracked_stats train_step_timing in s) over 2 logs, '
                     'the first logged step of each log dropped',
    'samples_per_s': 2048 / STEP_S,
    'n_result_logs': '2',
    'time_to_train_min': TTT,
    # the systems json, the README naming the config, the config and what it sources, the YAML
    # whose defaults were used, and the logs
    'source_files': ';'.join([
        'NVIDIA/systems/eos_n64_ngc24.09_nemo.json',
        f'{SUB}/README-eos_n64_ngc24.09_nemo.md',
        f'{SUB}/config_DGXH100_64x8x128x4x8_mbs2.sh',
        f'{SUB}/config_common.sh',
        f'{SUB}/config_fp8.sh',
        f'{SUB}/conf/custom.yaml',
        'NVIDIA/results/eos_n64_ngc24.09_nemo/gpt3/result_*.txt']),
    # H100 has a shipped system, FP8 is estimate's, the layout is 1d tp/pp/vp: expressible
    'expressible': 'yes',
    'reason': '',
    # estimate's flags: H100's calibrated system (its runtime, nemo), gpt3 at sequence 2048, fp8, the
    # layout above with --interleave 6; sequence parallelism on (no --sp off), no recompute, an
    # 8-GPU NVLink domain (no --nvs), and 96 blocks divide by pp 8 (no stage flags); FP8 parameters
    'args': '--system H100-calibrated --model gpt3 --seq-len 2048 --precision fp8 --tp 4 --pp 8 --cp 1 --dp 16 '
            '--mbs 2 --global-batch-size 2048 --interleave 6 --fp8-params on',
}
NUMERIC = {'step_s': 1e-5, 'samples_per_s': 1e-5, 'time_to_train_min': 1e-5}
# The header: validation/mlperf/README.md's columns, in the order EXPECTED lists them.
COLUMNS = list(EXPECTED)


def main():
    p = subprocess.run([sys.executable, SCRIPT, EXCERPT, '-o', '-'], capture_output=True, text=True)
    check(p.returncode == 0, f'import_mlperf.py exits 0 ({p.returncode}: {p.stderr.strip()[-300:]})')
    if p.returncode != 0:
        return
    header = next(csv.reader(io.StringIO(p.stdout)))
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    check(header == COLUMNS, 'the header is the documented columns in order')
    check(len(rows) == 1, f'one row per published result ({len(rows)})')
    if not rows:
        return
    row = rows[0]
    for col in COLUMNS:
        want, got = EXPECTED[col], row.get(col)
        if col in NUMERIC:
            ok = got not in (None, '') and math.isclose(float(got), want, rel_tol=NUMERIC[col])
            check(ok, f'{col} = {got} (by hand {want:.6f})')
        else:
            check(got == want, f'{col} = {got!r} (by hand {want!r})')

    # The block method, used where a round logs no per-step times: the same logs without their
    # tracked_stats lines. Training segments run from block_start (or eval_stop) to the next
    # block_stop (or eval_start); GPT-3's positions are tokens, a step is gbs x seq = 2048 x 2048 =
    # 4194304 tokens, so a block of epoch_count 50331648 is 12 steps. The first segment of each log
    # is dropped; the second:
    #   log 0: block_start 1727896773083 (first_epoch_num 50331648) to block_stop 1727896887587
    #          -> 114.504 s / 12 = 9.542 s
    #   log 1: block_start 1727896787422 to block_stop 1727896903607 -> 116.185 s / 12 = 9.6820833 s
    #   median of the two = (9.542 + 9.6820833) / 2 = 9.61204167
    spec = importlib.util.spec_from_file_location('import_mlperf', SCRIPT)
    im = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(im)
    summaries = []
    for i in (0, 1):
        with open(os.path.join(EXCERPT, f'NVIDIA/results/eos_n64_ngc24.09_nemo/gpt3/result_{i}.txt')) as f:
            text = ''.join(line for line in f if '"tracked_stats"' not in line)
        summaries.append(im.log_summary(im.mllog_events(text)))
    st, how = im.step_time(summaries, 'gpt3')
    want = (114.504 / 12 + 116.185 / 12) / 2
    check(st is not None and math.isclose(st, want, rel_tol=1e-9), f'block method: step_s {st} (by hand {want:.8f})')
    check(how.startswith('training segments') and 'median of 2 segments over 2 logs' in how,
          f'block method named: {how!r}')
    # Only the rounds the set is made of are read: a round outside READ_ROUNDS is refused.
    for other in ('v9.9', 'v0.7'):
        check(other not in im.READ_ROUNDS, f'{other} is not a round of the set')
        try:
            im.Tree(f'{other}={EXCERPT}')
            refused = False
        except SystemExit:
            refused = True
        check(refused, f'round {other} is refused')
    check(all(im.Tree(f'{r}={EXCERPT}').round == r for r in im.READ_ROUNDS), 'every round of the set is read')


if __name__ == '__main__':
    main()
    if FAILURES:
        print(f'{len(FAILURES)} check(s) failed')
        sys.exit(1)
    print('all checks passed')
