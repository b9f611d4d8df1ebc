"""perfsweep's plot commands as modules: each has main(argv) and cli() (its console script,
perfsweep-plot-NAME; scripts/plot_NAME.py runs the same from a checkout). They use matplotlib's
Agg backend, so importing one needs matplotlib (Debian's python3-matplotlib)."""
