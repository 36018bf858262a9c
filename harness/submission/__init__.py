"""MLPerf's submission tree (v6.1) from beyond-tops results, and MLPerf's checker run over it.

Modules: ``plan`` (which run goes where, and what each division refuses), ``system`` (the
system description JSON), ``accuracy_txt`` (accuracy.txt, the log's hash, its truncated copy),
``documents`` (measurements.json and the READMEs), ``tree`` (the tree, written whole or not at
all), ``export`` (all of it as one call) and ``checker`` (MLPerf's own checker). Nothing is
re-exported here.
"""
