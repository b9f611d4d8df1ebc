#!/usr/bin/env python3
"""One parallelization strategy against another across systems: the speed-up of run A over run

The perfsweep package's plot command perfsweep.plots.compare (python/perfsweep/plots/compare.py; installed
as perfsweep-plot-compare), run from a checkout without `pip install .`."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, 'python'))
from perfsweep.plots import compare as _plot  # noqa: E402

if __name__ == '__main__':
    _plot.cli()
