"""The only package importing mlperf_loadgen: settings, QSL, SUTs, timed test, logs."""
