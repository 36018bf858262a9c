"""Datasets: synthetic or .npy samples, ImageNet as MLPerf prepares it, labelled photos."""
