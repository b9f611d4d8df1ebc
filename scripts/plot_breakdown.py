#!/usr/bin/env python3
"""The fastest configuration of one system at each GPU count, and where its time goes (the

The perfsweep package's plot command perfsweep.plots.breakdown (python/perfsweep/plots/breakdown.py; installed
as perfsweep-plot-breakdown), run from a checkout without `pip install .`."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, 'python'))
from perfsweep.plots import breakdown as _plot  # noqa: E402

if __name__ == '__main__':
    _plot.cli()
