"""Pure analysis over records: statistics, sweeps, accuracy, FLOPs, utilization, comparison."""
