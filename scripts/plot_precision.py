#!/usr/bin/env python3
"""bf16 against fp8, system by system: one configuration of one model estimated in both

The perfsweep package's plot command perfsweep.plots.precision (python/perfsweep/plots/precision.py; installed
as perfsweep-plot-precision), run from a checkout without `pip install .`."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, 'python'))
from perfsweep.plots import precision as _plot  # noqa: E402

if __name__ == '__main__':
    _plot.cli()
