"""Fleet runs: one suite across many machines through Slurm or Kubernetes."""
