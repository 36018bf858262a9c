"""Published MLPerf results (v4.x-v6.x trees): imported as records beside local runs, and read.

Modules: ``tree`` (where each result sits under any path a user gives), ``files`` (a tree's
files read inside it, bounded), ``read`` (one result's logs and JSON files into a
harness.records.published record), ``metric`` (its round's MLPerf metric, as the catalogue
names it), ``store`` (the records and copies of their files on disk, never overwritten),
wired by ``importer``; ``record`` (published.json, versioned) and ``describe`` (its rows
for show and the report) read a record back.
"""
