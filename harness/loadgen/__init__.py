"""The only package that imports mlperf_loadgen: settings, QSL, SUTs, the timed test and its logs."""
