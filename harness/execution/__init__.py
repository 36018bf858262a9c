"""Execution: a request from the CLI to job files, workers, LoadGen runs and typed results.

campaign (trials, sweeps) -> pipeline (one run directory) -> worker (one job, in a process or a
container) -> runner (prepare, warm up, LoadGen, telemetry) -> recording (the typed result).
"""
