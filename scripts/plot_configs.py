#!/usr/bin/env python3
"""Plots the CSV of the `configs` command: chosen parallel configurations at a fixed GPU count,

The perfsweep package's plot command perfsweep.plots.configs (python/perfsweep/plots/configs.py; installed
as perfsweep-plot-configs), run from a checkout without `pip install .`."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, 'python'))
from perfsweep.plots import configs as _plot  # noqa: E402

if __name__ == '__main__':
    _plot.cli()
