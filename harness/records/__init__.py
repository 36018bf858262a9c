"""Every typed record that crosses a package boundary, and the metric catalogue (metrics.py)."""
