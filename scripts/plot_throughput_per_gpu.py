#!/usr/bin/env python3
"""Best throughput per GPU against GPU count for every system of a sweep run, normalized to the

The perfsweep package's plot command perfsweep.plots.throughput_per_gpu (python/perfsweep/plots/throughput_per_gpu.py; installed
as perfsweep-plot-throughput-per-gpu), run from a checkout without `pip install .`."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, 'python'))
from perfsweep.plots import throughput_per_gpu as _plot  # noqa: E402

if __name__ == '__main__':
    _plot.cli()
