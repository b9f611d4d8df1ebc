#!/usr/bin/env python3
"""Training time in days against GPU count for every system of a sweep run (log-log), with

The perfsweep package's plot command perfsweep.plots.training_time (python/perfsweep/plots/training_time.py; installed
as perfsweep-plot-training-time), run from a checkout without `pip install .`."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, 'python'))
from perfsweep.plots import training_time as _plot  # noqa: E402

if __name__ == '__main__':
    _plot.cli()
