"""Datasets: synthetic or .npy samples (samples.py); ImageNet as MLPerf prepares it (imagenet)."""
