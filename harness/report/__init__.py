"""Renderers and writers that read results and never touch hardware."""
