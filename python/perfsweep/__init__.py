"""perfsweep's outputs in Python: `perfsweep.open(path)` reads an HDF5 file that `sweep` wrote.

    import perfsweep
    df = perfsweep.open('outputs/exec_1d_gpt3_1T.h5')          # pandas DataFrame of the top configurations
    ds = perfsweep.open('outputs/sweep_bw_capacity_1d_gpt3_1T.h5')  # xarray Dataset of a hardware sweep

perfsweep.h5 has the rest (dataframe, open_grid, check_sidecar, run_info, load, to_npy, summary; docs/python.md).
perfsweep.estimate(**flags) and perfsweep.search(**flags) run the tools in-process (perfsweep.api).
"""
from .api import PerfsweepError, estimate, search
from .h5 import check_sidecar, dataframe, is_hw_sweep, load, open_grid, run_info, summary, to_npy

__all__ = ['open', 'check_sidecar', 'dataframe', 'open_grid', 'run_info', 'load', 'summary', 'to_npy', 'is_hw_sweep',
           'estimate', 'search', 'PerfsweepError']


def open(path, system=None):  # noqa: A001 (the package's entry point, as xarray.open_dataset)
    """A hardware sweep as an xarray Dataset (open_grid), any other run as a pandas DataFrame of
    its top configurations, one row per (system, GPU count, rank) (dataframe; `system` picks groups)."""
    if is_hw_sweep(path):
        return open_grid(path)
    return dataframe(path, system)
