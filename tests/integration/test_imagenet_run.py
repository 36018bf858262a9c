"""A real LoadGen run over a generated ImageNet-style folder, scored against its val_map labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import jsonschema
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from harness.cli import main
from harness.datasets.imagenet import load_dataset
from harness.paths import cache_root
from tests.conftest import write_scenario

pytestmark = pytest.mark.slow
CLASSES = 1001  # MLPerf's ResNet-50: class 0 is background, class k + 1 is ImageNet label k
RED_LABEL, BLUE_LABEL = 3, 5
SIZES = [(300, 400), (480, 360), (256, 256), (333, 500)]


def colour_model(path: Path) -> Path:
    """[N, 3, 224, 224] -> [N, 1001]: channel means, red to class 4 and blue to class 6.

    After the mean subtraction a red image has a positive R mean and a negative B mean, a blue
    one the reverse, so top-1 is label + 1: right only with the 1001-class offset.
    """
    weights = np.zeros((3, CLASSES), dtype=np.float32)
    weights[0, RED_LABEL + 1] = 1.0
    weights[2, BLUE_LABEL + 1] = 1.0
    graph = helper.make_graph(
        [
            helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
            helper.make_node("Flatten", ["pooled"], ["means"], axis=1),
            helper.make_node("MatMul", ["means", "weights"], ["scores"]),
        ],
        "colour",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", CLASSES])],
        initializer=[numpy_helper.from_array(weights, "weights")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def image_folder(root: Path) -> Path:
    """Eight JPEGs, four mostly red (label 3) and four mostly blue (label 5), and val_map.txt."""
    root.mkdir()
    rng = np.random.default_rng(12)
    lines = []
    for i in range(8):
        height, width = SIZES[i % 4]
        red = i % 2 == 0
        image = rng.integers(0, 60, size=(height, width, 3), dtype=np.uint8)
        image[..., 2 if red else 0] = rng.integers(180, 256, size=(height, width), dtype=np.uint8)
        name = f"ILSVRC2012_val_{i + 1:08d}.JPEG"
        ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])
        assert ok
        (root / name).write_bytes(data.tobytes())
        lines.append(f"{name} {RED_LABEL if red else BLUE_LABEL}\n")
    (root / "val_map.txt").write_text("".join(lines))
    return root


SCENARIO = """
name: imagenet-test
scenario: SingleStream
model: {{path: {model}}}
batch_size: 1
trials: 1
data: {{source: imagenet, dir: {data}}}
warmup: {{min_queries: 20, min_duration_ms: 300}}
quick: {{min_duration_ms: 1000, min_query_count: 100, performance_sample_count: 8,
        accuracy_sample_count: 8}}
"""


def test_imagenet_folder_runs_and_scores_labels_with_the_1001_class_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], result_schema: dict[str, Any]
) -> None:
    model = colour_model(tmp_path / "colour.onnx")
    folder = image_folder(tmp_path / "imagenet")
    scenario = write_scenario(tmp_path / "s.yaml", SCENARIO.format(model=model, data=folder))
    code = main(["run", str(scenario), "--out", str(tmp_path / "runs")])
    out, _ = capsys.readouterr()
    assert code == 0, out
    run_dir = Path(out.strip().splitlines()[-1])
    result = json.loads((run_dir / "result.json").read_text())
    jsonschema.validate(result, result_schema, format_checker=jsonschema.FormatChecker())
    assert result["valid"] is True
    assert result["settings"]["performance_sample_count"] == 8
    labelled = result["accuracy"]["against_labels"]
    assert labelled["count"] == 8 and labelled["label_offset"] == 1
    assert labelled["top1"] == 1.0 and labelled["fp32_top1"] == 1.0
    assert labelled["closed_division"]["passed"] is True
    assert "against labels (label_offset 1):" in (run_dir / "accuracy" / "accuracy.txt").read_text()
    # Both workers read one preprocessed copy, kept under the cache root by its content key.
    assert (cache_root() / "imagenet" / f"{load_dataset(folder).key}.npy").is_file()


def test_a_model_without_a_224_input_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = image_folder(tmp_path / "imagenet")
    scenario = write_scenario(
        tmp_path / "s.yaml",
        SCENARIO.format(model="x", data=folder).replace("{path: x}", "{zoo: tiny}"),
    )
    code = main(["run", str(scenario), "--out", str(tmp_path / "runs")])
    _, err = capsys.readouterr()
    assert code == 2
    assert "data.source imagenet: the model's inputs are" in err
    assert "float32[N, 3, 224, 224]" in err
