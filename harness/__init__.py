"""beyond-tops: MLPerf LoadGen inference benchmarks that measure what hardware really does."""

__version__ = "0.1.0"
