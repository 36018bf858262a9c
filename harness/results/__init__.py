"""Typed, versioned results: run records, their JSON files, trial-group and sweep files.

Modules: ``records`` and ``measures`` (the frozen records), ``codec`` (records <-> JSON data),
``runfile`` (result.json and its migrations), ``metrics`` (the one metric accessor),
``groupfile`` (trials.json, sweep.json) and ``build`` (a run's measurements -> RunResult).
Nothing is re-exported here, so importing a record does not import the builder's stack.
"""
