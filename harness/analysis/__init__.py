"""Pure analysis over results: statistics, sweeps, FLOPs, utilization, comparison."""
