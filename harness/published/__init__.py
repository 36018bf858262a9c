"""Import published MLPerf results trees (v4.x-v6.x layouts) as records beside local runs.

Modules: ``tree`` (where each result sits under any path a user gives), ``read`` (one
result's logs and JSON files into a harness.results.published record) and ``store`` (the
records and copies of their files on disk, never overwritten), wired by ``importer``.
"""
