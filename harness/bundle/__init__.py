"""Signed result bundles: run directories in a deterministic tar, a sha256 manifest, Ed25519."""
