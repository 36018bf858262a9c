"""Where a generative model's INT4 error comes from: weights, logits, then greedy tokens.

For each INT4 form (``float``: each 32-weight block's own scale and float minimum, the
harness's default; ``uint4``: onnxruntime's MatMulNBitsQuantizer; ``sym``: symmetric blocks)
the FP32 model's MatMul weights are quantized as the converter does (harness.runtime.convert),
and this prints: the weights' rms error relative to their rms (mean and worst over the
MatMuls) and the worst absolute error; the first prompt's logits error in plain onnxruntime
(no cache), against their range, and the share of its positions whose top token is kept; and
the accuracy job's score (its prompts, its greedy generation, token agreement with FP32,
median first divergence, ROUGE-L). The README's Precision and accuracy table came from it.

    .venv/bin/python benchmarks/int4_error.py smollm2-135m-instruct scenarios/smollm2-offline.yaml
    .venv/bin/python benchmarks/int4_error.py llm-tiny scenarios/llm-tiny-offline.yaml float,uint4
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from harness.analysis.genaccuracy import token_agreement
from harness.config import load_scenario
from harness.datasets.prompts import Prompts, synthetic_prompts, text_prompts
from harness.execution.genexact import greedy
from harness.execution.genrunner import ACCURACY_PROMPTS
from harness.models.llm.store import generative_model_dir
from harness.runtime.convert import to_int4
from harness.runtime.genai import GenaiModel
from harness.runtime.nbits import Blockwise, block_indicator, dequantize

BLOCK = 32


def prompts_of(scenario_path: Path, model: GenaiModel, vocab: int) -> Prompts:
    """The scenario's prompts, as the accuracy job makes them."""
    scenario = load_scenario(scenario_path)
    gen = scenario.generation
    assert gen is not None, f"{scenario_path}: not a generative scenario"
    count, seed = scenario.data.total_sample_count, scenario.data.seed
    if gen.prompts == "text":
        return text_prompts(gen, encode=model.encode, count=count, seed=seed)
    return synthetic_prompts(gen, vocab=vocab, count=count, seed=seed)


def logits(path: Path, ids: np.ndarray) -> np.ndarray:
    """The whole prompt's logits in plain onnxruntime, with an empty KV cache."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    batch = np.asarray(ids, dtype=np.int64)[None]
    feeds = {
        "input_ids": batch,
        "attention_mask": np.ones_like(batch),
        "position_ids": np.arange(batch.shape[1])[None],
    }
    for item in session.get_inputs():
        if item.name.startswith("past"):
            feeds[item.name] = np.zeros([1, item.shape[1], 0, item.shape[3]], np.float32)
    out: np.ndarray = session.run(["logits"], feeds)[0][0]
    return out


def dequantized(model: onnx.ModelProto, form: str) -> dict[str, np.ndarray]:
    """Each quantized weight as its MatMulNBits node multiplies by, read from the graph."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    out = {}
    for node in model.graph.node:
        if node.op_type != "MatMulNBits":
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        packed, scales = inits[node.input[1]], inits[node.input[2]].reshape(-1)
        zero = None
        if len(node.input) > 3:  # onnxruntime's uint4 zero points, two a byte
            codes = inits[node.input[3]].reshape(attrs["N"], -1)
            both = np.stack([codes & 0x0F, codes >> 4], axis=-1).reshape(attrs["N"], -1)
            zero = both[:, : packed.shape[1]].reshape(-1).astype(np.float32)
        name = node.input[1].removesuffix("_Q4")
        w = dequantize(Blockwise(packed, scales, zero, int(attrs["K"]), int(attrs["block_size"])))
        if form == "float":  # the block-offset term beside the node (harness.runtime.nbits)
            offsets = inits.get(f"{name}_block_offsets")
            if offsets is not None:
                w = w + block_indicator(w.shape[0], BLOCK) @ offsets
        out[name] = w
    return out


def weight_errors(
    weights: dict[str, np.ndarray], got: dict[str, np.ndarray]
) -> tuple[float, float, float]:
    """(mean, worst) rms error / rms weight over the quantized weights, and the worst abs error."""
    relative, worst = [], 0.0
    for name, w in got.items():
        error = w - weights[name]
        relative.append(float(np.sqrt((error**2).mean() / (weights[name] ** 2).mean())))
        worst = max(worst, float(np.abs(error).max()))
    return float(np.mean(relative)), float(np.max(relative)), worst


def main(argv: list[str]) -> int:
    name, scenario_path = argv[0], Path(argv[1])
    forms = (argv[2] if len(argv) > 2 else "float,uint4,sym").split(",")
    reference = generative_model_dir(name)
    fp32 = GenaiModel(reference)
    vocab = int(json.loads((reference / "genai_config.json").read_text())["model"]["vocab_size"])
    prompts = prompts_of(scenario_path, fp32, vocab)
    hold = bool(load_scenario(scenario_path).generation.hold_eos)  # type: ignore[union-attr]
    count = min(ACCURACY_PROMPTS, prompts.count)
    expected = [greedy(fp32, prompts, i, hold) for i in range(count)]
    source = onnx.load(str(reference / "model.onnx"))
    weights = {i.name: numpy_helper.to_array(i) for i in source.graph.initializer}
    base = logits(reference / "model.onnx", prompts.ids[0])
    with tempfile.TemporaryDirectory() as tmp:
        for form in forms:
            work = Path(tmp) / form
            shutil.copytree(reference, work)
            copy = onnx.ModelProto()
            copy.CopyFrom(source)  # onnxruntime's quantizer changes the model it is given
            zero = "uint4" if form == "uint4" else "float"
            model = to_int4(copy, block_size=BLOCK, symmetric=form == "sym", zero_points=zero)
            onnx.save(model, str(work / "model.onnx"))
            mean, worst_rel, worst_abs = weight_errors(weights, dequantized(model, form))
            got = logits(work / "model.onnx", prompts.ids[0])
            runs = GenaiModel(work)
            score = token_agreement(
                [greedy(runs, prompts, i, hold) for i in range(count)], expected
            )
            print(
                json.dumps(
                    {
                        "model": name,
                        "int4": form,
                        "weights_rel_rms_mean": round(mean, 5),
                        "weights_rel_rms_max": round(worst_rel, 5),
                        "weights_max_abs": round(worst_abs, 5),
                        "logits_max_abs_error": round(float(np.abs(got - base).max()), 4),
                        "logits_max_abs": round(float(np.abs(base).max()), 3),
                        "top_token_kept": round(
                            float((got.argmax(-1) == base.argmax(-1)).mean()), 3
                        ),
                        "agreement": score.agreement,
                        "median_first_divergence": score.median_first_divergence,
                        "rouge_l": score.rouge_l,
                    }
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
