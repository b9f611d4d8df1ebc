"""perfsweep's estimate and configs in-process (the pybind11 module _perfsweep, built with the
tools: apps/python/module.cpp).

    import perfsweep
    r = perfsweep.estimate(model='llama3_70b', system='H100', tp=8, pp=4, dp=2, global_batch_size=64)
    r['totals']['t']                       # what `estimate ... --json` prints, as a dict
    df = perfsweep.search(model='llama3_70b', system='H100', n_gpus=64, global_batch_size=64, top=5)

Keyword arguments are the tools' flags with dashes as underscores: True adds a flag, False and None
leave it out, a list or tuple is a comma-separated list (`zero=[0, 1]`), anything else its str().
A tool that exits non-zero raises PerfsweepError with its exit code (2: bad input) and its message
(what the tool prints on standard error: "estimate: error: ..."); its warnings, where it succeeds,
go to sys.stderr. help=True or version=True returns the tool's text (its --help, its --version).
The tools run in this process any number of times.
"""
import io
import json
import sys

__all__ = ['estimate', 'search', 'PerfsweepError', 'flags_of']


class PerfsweepError(RuntimeError):
    """A tool's non-zero exit: `code` 2 for bad input, 1 for a failure to write; `message` the
    tool's error lines ("estimate: error: ..."), `stderr` all it printed there."""

    def __init__(self, tool, code, args, stderr=''):
        errors = [line for line in stderr.splitlines() if line.startswith(f'{tool}: error:')]
        self.message = '\n'.join(errors) if errors else stderr.strip()
        self.stderr = stderr
        self.code = code
        shown = self.message or f'{tool} exited with {code}'
        super().__init__(f'{shown} (exit {code}; arguments: {" ".join(args)})')


def flags_of(**flags):
    """The command-line words of keyword arguments: flags_of(global_batch_size=64, quiet=True)
    is ['--global-batch-size', '64', '--quiet']."""
    words = []
    for key, value in flags.items():
        flag = '--' + key.replace('_', '-')
        if value is None or value is False:
            continue
        if value is True:
            words.append(flag)
        elif isinstance(value, (list, tuple)):
            words += [flag, ','.join(str(v) for v in value)]
        else:
            words += [flag, str(value)]
    return words


def _run(tool, words):
    from . import _perfsweep  # built beside this file by the C++ build (apps/CMakeLists.txt)
    code, out, err = _perfsweep.run(tool, words)
    if code != 0:
        raise PerfsweepError(tool, code, words, err)
    if err:
        sys.stderr.write(err)
    return out


def _text(flags):
    """Whether the flags ask for the tool's own text (--help, --version) rather than results."""
    return bool(flags.get('help') or flags.get('version'))


def estimate(**flags):
    """`estimate FLAGS --json` in-process: its JSON object as a dict (floats as the text gives them,
    so bit for bit what the command prints)."""
    if _text(flags):
        return _run('estimate', flags_of(**flags))
    return json.loads(_run('estimate', flags_of(**flags) + ['--json', '--quiet']))


# The categories of the DataFrame's option columns: each execution option's values in their
# order, as the C++ table gives them (model/execution_options.hpp, through the module), and the
# attention's.
ATTENTION_VALUES = ['flash', 'unfused', 'unfused-recompute']


def option_values():
    """{option: its value names by code} of the execution options spelt with names, and 'attention'."""
    from . import _perfsweep
    return {**_perfsweep.option_values(), 'attention': ATTENTION_VALUES}


# The units of configs' CSV columns (apps/configs/main.cpp to_csv), as the sweep's HDF5 columns of
# the same names give them (test_package.py checks that they agree).
CSV_UNITS = {'n_gpus': 'GPUs', 'throughput': 'samples/s', 'mem_limit': 'GB', 'mem_headroom': 'GB', 'hbm_capacity': 'GB',
             'flops_per_gpu': 'TFLOP', 'mbs': 'samples', 'nb': 'blocks', 'micro_batches': 'micro-batches',
             'tokens_per_s_per_gpu': 'tokens/s', 'model_tflops_per_gpu': 'TFLOP/s', 'mfu': '1', 'mfu_precision': '1',
             'gpu_hour_cost': 'currency per GPU-hour', 'cost_per_mtok': 'currency per million tokens',
             'train_days': 'days', 'gpu_hours': 'GPU-h', 'cost': 'currency'}


def csv_units(columns):
    """{column: unit} of configs' CSV columns: CSV_UNITS, times (t, t_*) in s, memories (mem,
    *_mem) in GB, fractions (*_frac) 1, degrees and NVLink shares in GPUs."""
    out = {}
    for c in columns:
        if c in CSV_UNITS:
            out[c] = CSV_UNITS[c]
        elif c == 't' or (c.startswith('t_') and c != 't_max'):
            out[c] = 's'
        elif c == 'mem' or c.endswith('_mem'):
            out[c] = 'GB'
        elif c.endswith('_frac'):
            out[c] = '1'
        elif c in ('dp', 'tp', 'tp1', 'tp2', 'pp', 'cp', 'ep') or c.startswith('nv_'):
            out[c] = 'GPUs'
    return out


def search(**flags):
    """`configs FLAGS --csv` in-process: its rows as a pandas DataFrame (floats parsed round-trip,
    so bit for bit what the command prints), the execution options and attention as categoricals
    (recompute 'none', 'selective', 'full'), df.attrs['units'] the unit of each column that has one
    ('s', 'GB', 'samples/s', 'tokens/s', '1' for fractions). `system` may list several systems
    (system=['H100-calibrated', 'B200-calibrated']) and gpu_hour_cost price each
    ('H100-calibrated=2.5,B200-calibrated=4'), sort='cost' ranking them by the price of a token."""
    if _text(flags):
        return _run('configs', flags_of(**flags))
    import pandas as pd
    out = _run('configs', flags_of(**flags) + ['--csv', '--quiet'])
    df = pd.read_csv(io.StringIO(out), float_precision='round_trip')
    for column, values in option_values().items():
        if column in df:
            order = values + sorted(set(df[column].astype(str)) - set(values))
            df[column] = pd.Categorical(df[column].astype(str), categories=order)
    df.attrs['units'] = csv_units(df.columns)
    df.attrs['tool'] = 'configs'
    df.attrs['arguments'] = flags_of(**flags)
    return df
