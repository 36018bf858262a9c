"""Model zoo, registry and validation."""
