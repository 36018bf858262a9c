"""genai_config.json for a decoder built by harness.models.llm.graph: names, dims, search."""

from __future__ import annotations

import json
from typing import Any

from harness.models.llm.dims import LlamaDims

MODEL_FILE = "model.onnx"


def genai_config(dims: LlamaDims, *, bos_id: int, eos_id: int, pad_id: int) -> str:
    """The config onnxruntime-genai loads a model directory by (greedy search by default).

    past_present_share_buffer is false: the graph appends to the past with Concat, so the
    present is a new, longer tensor each step (GroupQueryAttention's shared buffer is not used).
    """
    decoder: dict[str, Any] = {
        "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
        "filename": MODEL_FILE,
        "head_size": dims.head_dim,
        "hidden_size": dims.hidden,
        "num_attention_heads": dims.heads,
        "num_hidden_layers": dims.layers,
        "num_key_value_heads": dims.kv_heads,
        "inputs": {
            "input_ids": "input_ids",
            "attention_mask": "attention_mask",
            "position_ids": "position_ids",
            "past_key_names": "past_key_values.%d.key",
            "past_value_names": "past_key_values.%d.value",
        },
        "outputs": {
            "logits": "logits",
            "present_key_names": "present.%d.key",
            "present_value_names": "present.%d.value",
        },
    }
    config = {
        "model": {
            "type": "llama",
            "bos_token_id": bos_id,
            "eos_token_id": eos_id,
            "pad_token_id": pad_id,
            "vocab_size": dims.vocab,
            "context_length": dims.context,
            "decoder": decoder,
        },
        "search": {
            "do_sample": False,
            "num_beams": 1,
            "num_return_sequences": 1,
            "max_length": dims.context,
            "min_length": 0,
            "past_present_share_buffer": False,
            "repetition_penalty": 1.0,
            "temperature": 1.0,
            "top_k": 1,
            "top_p": 1.0,
            "early_stopping": True,
            "length_penalty": 1.0,
            "no_repeat_ngram_size": 0,
            "diversity_penalty": 0.0,
        },
    }
    return json.dumps(config, indent=1, sort_keys=True)
