#!/usr/bin/env python3
"""A hardware design-space sweep (`sweep --sweep sweeps/bw_capacity.yaml`) as a heatmap at one

The perfsweep package's plot command perfsweep.plots.hw_sweep (python/perfsweep/plots/hw_sweep.py; installed
as perfsweep-plot-hw-sweep), run from a checkout without `pip install .`."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, 'python'))
from perfsweep.plots import hw_sweep as _plot  # noqa: E402

if __name__ == '__main__':
    _plot.cli()
