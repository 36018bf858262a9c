"""Llama-architecture decoders for onnxruntime-genai: seeded synthetic, and SmolLM2's real weights.

Plain ONNX ops, not onnxruntime's contrib ops (GroupQueryAttention, RotaryEmbedding,
MatMulNBits): every op is in the default domain at opset 17, so the same graph runs on every
execution provider the harness targets (CPU, CUDA, TensorRT, MIGraphX), passes onnx.checker,
goes through the harness's FP16 conversion, and leaves its projections as plain MatMuls that
onnxruntime's MatMulNBits quantizer can turn into INT4 later. The graph is also its own
no-cache reference: the same model with an empty past recomputes a whole sequence, which is
what the tests compare genai's cached generation with. The cost is speed: attention is not
fused, and the KV cache grows by Concat each step (genai's past_present_share_buffer off).

dims.py (the configs), weights.py (the weight record), graph.py (the ONNX builder),
synthetic.py (seeded weights), gguf_source.py (the real GGUF file, verified and dequantized),
tokenizer.py (byte-level BPE as tokenizer.json), genai_config.py, store.py (the cache).
"""
