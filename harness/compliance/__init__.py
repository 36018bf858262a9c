"""MLPerf's compliance tests TEST01 and TEST04: which a model needs, and their verification."""
