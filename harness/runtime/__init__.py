"""The only package that creates onnxruntime sessions: provider chains and session options."""
