"""The result file formats: result.json, trials.json and sweep.json, read and written.

Modules: ``runfile`` (result.json) and ``migrate`` (its older schema versions), ``groupfile``
(trials.json, sweep.json), ``groups`` (a run, trials or sweep directory loaded into one
group), ``schema`` (the JSON Schemas' checks) and ``versions`` (every format's version).
The records they read and write are harness.records'; nothing is re-exported here.
"""
