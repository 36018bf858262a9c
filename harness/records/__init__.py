"""Records that cross package boundaries; for now the metric catalogue (harness.records.metrics)."""
