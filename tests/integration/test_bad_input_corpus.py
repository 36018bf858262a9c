"""Issue #11: the bad-input contract of the whole CLI, as one table of cases.

Each case makes a bad input under tmp_path and runs `harness` on it. Every case must end with
one `error: ` line that names the culprit (file, key, option or value) and the fix, exit with
the code harness/errors.py gives that kind of error, print no traceback, and leave every file
that was there byte for byte as it was, with nothing new beside it (no run directory, no
`*.tmp`). Stop signals, which interrupt a real run, and meter logs with unreadable rows, which
must not fail one, are checked by the tests after the table.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

from harness.cli import main
from harness.config import MAX_BATCH_SIZE, MAX_DIM, MAX_DURATION_MS, MAX_SAMPLE_COUNT
from harness.errors import (
    ERROR_CODES,
    STOP_SIGNALS,
    ConfigError,
    DeviceError,
    ModelError,
    ResultError,
    interrupted_cause,
)
from harness.files import INCOMPLETE_FILE
from harness.models.registry import zoo_model_path
from harness.models.validate import runtime_max_opset
from harness.records.layout import RESULT_FILE
from harness.telemetry.external import ALLOW_METER_ENV
from tests.conftest import REPO, TINY_OFFLINE, TINY_SS, write_scenario

CONFIG = ERROR_CODES[ConfigError].code
MODEL = ERROR_CODES[ModelError].code
DEVICE = ERROR_CODES[DeviceError].code
RESULT = ERROR_CODES[ResultError].code

FIXTURES = REPO / "tests" / "fixtures"
RUN_FIXTURE = FIXTURES / "results" / "tiny-singlestream-v3"  # the current schema
GROUPS = [FIXTURES / "reports" / "trials-epyc", FIXTURES / "reports" / "trials-xeon"]
TINY_OFFLINE_FILE = REPO / "scenarios" / "tiny-offline.yaml"
SMOKE_SUITE = REPO / "scenarios" / "smoke.yaml"
OUT = "o"  # every case's --out, under tmp_path: it may be left behind empty, nothing more
TOO_BIG = 10**12
FUTURE_OPSET = runtime_max_opset() + 1

Setup = Callable[[Path], list[str]]  # makes the bad input under tmp_path, returns the argv


@dataclass(frozen=True)
class Case:
    name: str
    setup: Setup
    code: int
    fragments: tuple[str, ...]
    env: Mapping[str, str | None] = field(default_factory=dict)  # None: unset it


# --- inputs -------------------------------------------------------------------------------


def _scenario(tmp: Path, text: str = TINY_SS, name: str = "bad.yaml") -> Path:
    return write_scenario(tmp / name, text)


def _run(text: str = TINY_SS, *extra: str) -> Setup:
    """`harness run` on a scenario holding `text`."""
    return lambda tmp: ["run", str(_scenario(tmp, text)), *extra, "--out", str(tmp / OUT)]


def _yaml(old: str, new: str, base: str = TINY_SS) -> Setup:
    assert old in base
    return _run(base.replace(old, new))


def _tail(text: str, base: str = TINY_SS) -> Setup:
    return _run(base + text)


def _run_model(make: Callable[[Path], Path]) -> Setup:
    """`harness run TINY --model FILE` with the model file `make` writes."""

    def setup(tmp: Path) -> list[str]:
        model = make(tmp)
        return [
            "run",
            str(_scenario(tmp, name="tiny.yaml")),
            "--model",
            str(model),
            "--out",
            str(tmp / OUT),
        ]

    return setup


def _truncated(tmp: Path) -> Path:
    data = zoo_model_path("tiny").read_bytes()
    path = tmp / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    return path


def _text_file(tmp: Path) -> Path:
    path = tmp / "notes.onnx"
    path.write_text("these are my notes, not a model\n" * 20)
    return path


def _future_opset(tmp: Path) -> Path:
    model = onnx.load(str(zoo_model_path("tiny")))
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = FUTURE_OPSET
    path = tmp / "future.onnx"
    onnx.save(model, str(path))
    return path


def _identity(tmp: Path, dims: list[str | int], name: str) -> Path:
    """A one-node model whose input and output have the shape `dims`."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp / name
    onnx.save(model, str(path))
    return path


def _seq_model(model_yaml: str, batch_size: int = 1) -> Setup:
    """An Offline scenario of a [batch, seq] model, its `model:` entry `model_yaml`."""

    def setup(tmp: Path) -> list[str]:
        path = _identity(tmp, ["batch", "seq"], "seq.onnx")
        text = TINY_OFFLINE.replace(
            "model: {zoo: tiny}", model_yaml.replace("FILE", str(path))
        ).replace("batch_size: 8", f"batch_size: {batch_size}")
        return ["run", str(_scenario(tmp, text)), "--out", str(tmp / OUT)]

    return setup


def _file(name: str, text: str = "mine\n") -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        (tmp / name).write_text(text)
        return tmp / name

    return make


def _unwritable(tmp: Path) -> Path:
    """A directory this process may not create entries in (root ignores mode bits: /sys)."""
    if os.geteuid() == 0:
        return Path("/sys/corpus-runs")
    locked = tmp / "locked"
    locked.mkdir(mode=0o555)
    return locked / "corpus-runs"


def _result_copy(change: Callable[[dict[str, Any]], None]) -> Setup:
    """`harness show` of a copy of a real result.json, changed by `change`."""

    def setup(tmp: Path) -> list[str]:
        run_dir = tmp / "run"
        shutil.copytree(RUN_FIXTURE, run_dir)
        data = json.loads((run_dir / RESULT_FILE).read_text())
        change(data)
        (run_dir / RESULT_FILE).write_text(json.dumps(data))  # NaN is written as NaN
        return ["show", str(run_dir)]

    return setup


def _incomplete_run(tmp: Path) -> list[str]:
    run_dir = tmp / "20260101T000000Z-tiny-Offline-abcdef"
    run_dir.mkdir()
    (run_dir / INCOMPLETE_FILE).write_text("interrupted (Ctrl-C)\n")
    return ["show", str(run_dir)]


def _not_utf8(tmp: Path) -> list[str]:
    path = tmp / "latin1.yaml"
    path.write_bytes(TINY_SS.replace("tiny-ss-test", "caf\u00e9").encode("latin-1"))
    return ["run", str(path), "--out", str(tmp / OUT)]


def _set(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.__setitem__(key, value)


def _sweep(*extra: str) -> Setup:
    return lambda tmp: ["sweep", str(TINY_OFFLINE_FILE), *extra, "--out", str(tmp / OUT)]


# --- the corpus ------------------------------------------------------------------------------

MODEL_CASES = [
    Case(
        "model-missing",
        _run_model(lambda tmp: tmp / "absent.onnx"),
        MODEL,
        ("absent.onnx", "no such model file", "pass an existing .onnx file"),
    ),
    Case(
        "model-not-onnx",
        _run_model(_text_file),
        MODEL,
        ("notes.onnx", "not", "re-export"),
    ),
    Case(
        "model-truncated",
        _run_model(_truncated),
        MODEL,
        ("cut.onnx", "truncated", "re-export or re-download"),
    ),
    Case(
        "model-opset-too-new",
        _run_model(_future_opset),
        MODEL,
        ("future.onnx", f"opset {FUTURE_OPSET}", "newer than this onnxruntime", "opset <="),
    ),
    Case(
        "model-symbolic-dim-without-value",
        _seq_model("model: {path: FILE}"),
        MODEL,
        ("seq.onnx", "dim 'seq' is symbolic", "set model.dims.seq"),
    ),
    Case(
        "model-dims-name-not-in-model",
        _seq_model("model: {path: FILE, dims: {seq: 8, sequence: 8}}"),
        MODEL,
        ("seq.onnx", "model.dims sequence", "its symbolic dims: batch, seq"),
    ),
    Case(
        "model-input-too-large",
        _seq_model(f"model: {{path: FILE, dims: {{seq: {MAX_DIM}}}}}", batch_size=MAX_BATCH_SIZE),
        CONFIG,
        (
            "bad.yaml",
            f"model.dims.seq: {MAX_DIM} x batch_size {MAX_BATCH_SIZE}",
            "lower batch_size",
        ),
    ),
    Case(
        "model-unknown-zoo-name",
        _yaml("zoo: tiny", "zoo: tiny2"),
        MODEL,
        ("model.zoo", "'tiny2'", "known: ", "tiny"),
    ),
    Case(
        "models-build-path-as-name",
        lambda tmp: ["models", "build", "../x"],
        MODEL,
        ("unknown zoo model '../x'", "known: "),
    ),
]

YAML_CASES = [
    Case(
        "yaml-missing-file",
        lambda tmp: ["run", str(tmp / "nope.yaml"), "--out", str(tmp / OUT)],
        CONFIG,
        ("nope.yaml", "no such file"),
    ),
    Case(
        "yaml-syntax-error",
        _yaml("model: {zoo: tiny}", "model: {zoo: tiny"),
        CONFIG,
        ("bad.yaml", "line "),
    ),
    Case(
        "yaml-duplicate-key",
        _tail("scenario: Offline\n"),
        CONFIG,
        (
            "bad.yaml",
            f"line {len(TINY_SS.splitlines()) + 1}",
            "duplicate key 'scenario'",
            "give each key once",
        ),
    ),
    Case(
        "yaml-int-and-string-key",
        _yaml("model: {zoo: tiny}", "model: {zoo: tiny, dims: {1: 3, '1': 4}}"),
        CONFIG,
        ("bad.yaml", "key 1 is not a string; quote it"),
    ),
    Case(
        "yaml-unknown-key",
        _yaml("batch_size: 1", "batchsize: 1"),
        CONFIG,
        ("bad.yaml", "unknown key 'batchsize'", "allowed:", "batch_size"),
    ),
    Case(
        "yaml-unknown-nested-key",
        _yaml("min_queries: 20", "min_querys: 20"),
        CONFIG,
        ("bad.yaml", "unknown key 'warmup.min_querys'", "min_queries"),
    ),
    Case(
        "yaml-missing-required-key",
        _yaml("model: {zoo: tiny}\n", ""),
        CONFIG,
        ("bad.yaml", "missing required key 'model'"),
    ),
    Case(
        "yaml-wrong-type",
        _yaml("batch_size: 1", 'batch_size: "one"'),
        CONFIG,
        ("bad.yaml", "batch_size: expected int, got str 'one'"),
    ),
    Case(
        "yaml-scalar-for-mapping",
        _yaml("warmup: {min_queries: 20, min_duration_ms: 300}", "warmup: 300"),
        CONFIG,
        ("bad.yaml", "warmup: expected a mapping, got int"),
    ),
    Case(
        "yaml-peak-nan", _tail("peak_tflops: .nan\n"), CONFIG, ("bad.yaml", "peak_tflops", "finite")
    ),
    Case(
        "yaml-peak-inf", _tail("peak_tflops: .inf\n"), CONFIG, ("bad.yaml", "peak_tflops", "finite")
    ),
    Case(
        "yaml-peak-overflows-to-inf",
        _tail("peak_tflops: 1.0e+400\n"),
        CONFIG,
        ("bad.yaml", "peak_tflops", "finite"),
    ),
    Case(
        "yaml-negative-batch-size",
        _yaml("batch_size: 1", "batch_size: -4"),
        CONFIG,
        ("bad.yaml", "batch_size", ">= 1", "-4"),
    ),
    Case(
        "yaml-batch-size-past-bound",
        _yaml("batch_size: 8", f"batch_size: {TOO_BIG}", TINY_OFFLINE),
        CONFIG,
        ("bad.yaml", f"batch_size: must be 1..{MAX_BATCH_SIZE}, got {TOO_BIG}"),
    ),
    Case(
        "yaml-dim-past-bound",
        _yaml("model: {zoo: tiny}", f"model: {{zoo: tiny, dims: {{seq: {TOO_BIG}}}}}"),
        CONFIG,
        ("bad.yaml", f"model.dims.seq: must be 1..{MAX_DIM}, got {TOO_BIG}"),
    ),
    Case(
        "yaml-sample-count-past-bound",
        _yaml("total_sample_count: 64", f"total_sample_count: {TOO_BIG}"),
        CONFIG,
        ("bad.yaml", f"data.total_sample_count: must be 1..{MAX_SAMPLE_COUNT}"),
    ),
    Case(
        "yaml-duration-past-bound",
        _yaml("min_duration_ms: 1000", f"min_duration_ms: {TOO_BIG}"),
        CONFIG,
        ("bad.yaml", f"quick.min_duration_ms: must be 1..{MAX_DURATION_MS}"),
    ),
    Case(
        "yaml-bad-enum",
        _yaml("scenario: SingleStream", "scenario: Streaming"),
        CONFIG,
        ("bad.yaml", "scenario: 'Streaming' is not allowed", "allowed: SingleStream"),
    ),
    Case(
        "yaml-bad-nested-enum",
        _tail("runtime: {graph_optimization_level: max}\n"),
        CONFIG,
        ("bad.yaml", "runtime.graph_optimization_level: 'max' is not allowed", "extended"),
    ),
    Case(
        "yaml-telemetry-interval-out-of-range",
        _tail("telemetry: {interval_ms: 0}\n"),
        CONFIG,
        ("bad.yaml", "telemetry.interval_ms: must be 10..10000, got 0"),
    ),
    Case(
        "yaml-cpu-telemetry-interval-out-of-range",
        _tail("telemetry: {cpu_interval_ms: 20000}\n"),
        CONFIG,
        ("bad.yaml", "telemetry.cpu_interval_ms: must be 10..10000, got 20000"),
    ),
    Case(
        "yaml-empty-file",
        _run(""),
        CONFIG,
        ("bad.yaml", "expected a mapping of keys at the top level"),
    ),
    Case(
        "yaml-list-at-top-level",
        _run("- name: x\n"),
        CONFIG,
        ("bad.yaml", "expected a mapping of keys at the top level"),
    ),
    Case(
        "yaml-not-utf8",
        _not_utf8,
        CONFIG,
        ("latin1.yaml", "not UTF-8 text", "save the scenario as UTF-8"),
    ),
    Case(
        "yaml-suite-given-to-run",
        lambda tmp: ["run", str(SMOKE_SUITE), "--out", str(tmp / OUT)],
        CONFIG,
        ("smoke.yaml", "is a suite, not a scenario", "harness bench"),
    ),
    Case(
        "yaml-scenario-given-to-bench",
        lambda tmp: ["bench", str(_scenario(tmp)), "--out", str(tmp / OUT)],
        CONFIG,
        ("bad.yaml", "is a scenario, not a suite", "harness run"),
    ),
    Case(
        "yaml-provider-outside-the-chain",
        lambda tmp: [
            "run",
            str(_scenario(tmp, TINY_SS + "runtime:\n  providers: [MIGraphXExecutionProvider]\n")),
            "--hw",
            "nvidia",
            "--out",
            str(tmp / OUT),
        ],
        CONFIG,
        ("runtime.providers", "MIGraphXExecutionProvider", "HW=nvidia"),
    ),
    Case(
        "yaml-meter-command-without-opt-in",
        _tail("telemetry:\n  external_command: [cat, /etc/hostname]\n"),
        CONFIG,
        ("telemetry.external_command", "'cat'", f"{ALLOW_METER_ENV}=1"),
        env={ALLOW_METER_ENV: None},
    ),
    Case(
        "yaml-meter-command-opt-in-other-than-1",
        _tail("telemetry:\n  external_command: [cat, /etc/hostname]\n"),
        CONFIG,
        ("telemetry.external_command", f"{ALLOW_METER_ENV}=1"),
        env={ALLOW_METER_ENV: "yes"},
    ),
]

BATCHES = [  # sweep --batches: a value, and what the line says of it
    ("0", "must be 1..65536, got 0"),
    ("-2", "must be 1..65536, got -2"),
    ("1,100000", "must be 1..65536, got 100000"),
    ("a", "'a' is not a whole number"),
    ("1,,2", "'' is not a whole number"),
    ("2,2", "increasing order, each once"),
    ("4,2", "increasing order, each once"),
]


def _trials(verb: str, trials: str) -> Setup:
    def setup(tmp: Path) -> list[str]:
        target = {"run": _scenario(tmp), "sweep": TINY_OFFLINE_FILE, "bench": "smoke"}[verb]
        return [verb, str(target), "--trials", trials, "--out", str(tmp / OUT)]

    return setup


CLI_CASES = [
    *(
        Case(f"cli-batches-{value}", _sweep("--batches", value), CONFIG, ("--batches", says))
        for value, says in BATCHES
    ),
    *(
        Case(
            f"cli-trials-{trials}-{verb}",
            _trials(verb, trials),
            CONFIG,
            ("--trials", f"must be 1..100, got {trials}"),
        )
        for verb in ("run", "sweep", "bench")
        for trials in ("0", "-3", "101")
    ),
    Case(
        "cli-trials-word",
        _run(TINY_SS, "--trials", "a"),
        CONFIG,
        ("harness run", "--trials", "invalid int value: 'a'", "harness run --help"),
    ),
    Case(
        "cli-batch-size-past-bound",
        lambda tmp: [
            "run",
            str(TINY_OFFLINE_FILE),
            "--batch-size",
            str(TOO_BIG),
            "--out",
            str(tmp / OUT),
        ],
        CONFIG,
        ("tiny-offline.yaml", "--batch-size", f"batch_size: must be 1..{MAX_BATCH_SIZE}"),
    ),
    Case(
        "cli-unknown-hw",
        _run(TINY_SS, "--hw", "tpu"),
        DEVICE,
        ("HW=tpu", "unknown hardware target", "known: cpu"),
    ),
    Case(
        "cli-unknown-hw-doctor",
        lambda tmp: ["doctor", "--hw", "tpu"],
        DEVICE,
        ("HW=tpu", "unknown hardware target", "known: cpu"),
    ),
    Case(
        "cli-providers-not-in-chain",
        _run(TINY_SS, "--providers", "FooExecutionProvider"),
        CONFIG,
        ("--providers", "FooExecutionProvider", "HW=cpu", "allowed: CPUExecutionProvider"),
    ),
    Case(
        "cli-providers-of-another-target",
        _run(TINY_SS, "--hw", "nvidia", "--providers", "ROCMExecutionProvider"),
        CONFIG,
        ("--providers", "ROCMExecutionProvider", "not in HW=nvidia's chain"),
    ),
    Case(
        "cli-providers-out-of-order",
        _run(
            TINY_SS,
            "--hw",
            "nvidia",
            "--providers",
            "CUDAExecutionProvider,TensorrtExecutionProvider",
        ),
        CONFIG,
        ("--providers", "must keep HW=nvidia's order"),
    ),
    Case(
        "cli-unknown-profile",
        _run(TINY_SS, "--profile", "fast"),
        CONFIG,
        ("--profile", "invalid choice: 'fast'", "submission", "harness run --help"),
    ),
    Case(
        "cli-unknown-precision",
        _run(TINY_SS, "--precision", "fp8"),
        CONFIG,
        ("--precision", "'fp8' is not allowed", "int8"),
    ),
    Case(
        "cli-image-without-docker",
        _run(TINY_SS, "--image", "x:1"),
        CONFIG,
        ("--image", "only with --runner docker"),
    ),
    Case(
        "cli-unknown-option-name",
        _run(TINY_SS, "--name", "../x"),
        CONFIG,
        ("unrecognized arguments: --name ../x", "--help"),
    ),
    Case(
        "cli-suite-name-with-dot-dot",
        lambda tmp: ["bench", "../x", "--out", str(tmp / OUT)],
        CONFIG,
        ("scenarios/../x.yaml", "no such file"),
    ),
    Case(
        "cli-suite-name-absolute",
        lambda tmp: ["bench", str(tmp / "elsewhere"), "--out", str(tmp / OUT)],
        CONFIG,
        ("elsewhere.yaml", "no such file"),
    ),
]

PATH_CASES = [
    Case(
        "out-is-a-file",
        lambda tmp: ["run", str(_scenario(tmp)), "--out", str(_file("runs.txt")(tmp))],
        RESULT,
        ("runs.txt", "is a file, not a directory", "pass a directory as --out"),
    ),
    Case(
        "out-under-a-file",
        lambda tmp: ["run", str(_scenario(tmp)), "--out", str(_file("a-file")(tmp) / "runs")],
        RESULT,
        ("a-file", "writable --out"),
    ),
    Case(
        "out-not-writable",
        lambda tmp: ["run", str(_scenario(tmp)), "--out", str(_unwritable(tmp))],
        RESULT,
        ("corpus-runs", "cannot create the results directory", "pass a writable --out"),
    ),
    Case(
        "report-out-is-a-file",
        lambda tmp: ["report", str(GROUPS[0]), "--out", str(_file("report.md")(tmp))],
        RESULT,
        ("report.md", "not a directory", "--out"),
    ),
    Case(
        "report-out-under-a-file",
        lambda tmp: ["report", str(GROUPS[0]), "--out", str(_file("a-file")(tmp) / "r")],
        RESULT,
        ("a-file", "not a directory", "--out"),
    ),
    Case(
        "report-of-a-missing-dir",
        lambda tmp: ["report", str(tmp / "gone"), "--out", str(tmp / "r")],
        RESULT,
        ("gone", "no such directory", "pass a run, trials or sweep directory"),
    ),
    Case(
        "compare-out-is-a-file",
        lambda tmp: ["compare", *map(str, GROUPS), "--out", str(_file("compare.md")(tmp))],
        RESULT,
        ("compare.md", "not a directory", "--out"),
    ),
    Case(
        "compare-one-dir",
        lambda tmp: ["compare", str(GROUPS[0])],
        CONFIG,
        ("compare", "give at least two"),
    ),
    Case(
        "show-a-dir-without-result",
        lambda tmp: ["show", str(tmp)],
        RESULT,
        (RESULT_FILE, "no such result", "pass a run directory"),
    ),
    Case(
        "show-an-incomplete-run",
        _incomplete_run,
        RESULT,
        ("incomplete", "interrupted (Ctrl-C)"),
    ),
    Case(
        "show-result-with-wrong-types",
        _result_copy(_set("batch_size", "eight")),
        RESULT,
        (RESULT_FILE, "batch_size", "expected an integer", "re-run it"),
    ),
    Case(
        "show-result-with-nan",
        _result_copy(_set("samples_per_second", float("nan"))),
        RESULT,
        (RESULT_FILE, "samples_per_second is NaN, not a finite number"),
    ),
]

CORPUS = [*MODEL_CASES, *YAML_CASES, *CLI_CASES, *PATH_CASES]


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under root: a file's bytes, None for a directory."""
    return {
        str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


def _call(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own exit, after its one-line error
        return exc.code if isinstance(exc.code, int) else 1


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error: ")]


def test_the_corpus_is_large_and_its_names_unique() -> None:
    assert len(CORPUS) >= 45
    assert len({case.name for case in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_bad_input(
    case: Case, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in case.env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # a relative default (results/runs) would land here, and show
    argv = case.setup(tmp_path)
    before = _snapshot(tmp_path)
    capfd.readouterr()
    code = _call(argv)
    _, err = capfd.readouterr()  # fd-level: a worker's lines count as the user sees them
    after = _snapshot(tmp_path)

    assert code == case.code, err
    assert "Traceback" not in err, err
    lines = _error_lines(err)
    assert lines, err
    for fragment in case.fragments:
        assert fragment in lines[-1], lines[-1]
    assert {k: after.get(k, b"<gone>") for k in before} == before, "a file changed or was lost"
    new = set(after) - set(before)
    assert new <= {OUT}, f"left behind: {sorted(new)}"
    assert not (tmp_path / OUT).exists() or not any((tmp_path / OUT).iterdir())
    assert not fnmatch.filter(after, "*.tmp")
    assert len(lines) == 1, err  # a worker's error is printed once, by the worker


def test_a_fixed_input_too_large_for_memory(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    model = _identity(tmp_path, ["batch", 1 << 40], "huge.onnx")  # 4 TiB of float32
    scenario = _scenario(tmp_path, name="tiny.yaml")
    code = _call(["run", str(scenario), "--model", str(model), "--out", str(tmp_path / OUT)])
    _, err = capfd.readouterr()
    assert "Traceback" not in err
    assert code in {entry.code for entry in ERROR_CODES.values()}
    assert len(_error_lines(err)) == 1 and "huge.onnx" in _error_lines(err)[-1]
    assert "out of memory" in _error_lines(err)[-1]
    assert not (tmp_path / OUT).exists() or not any((tmp_path / OUT).iterdir())


# --- telemetry files: bad rows of a meter log are recorded, never fatal --------------------------


@pytest.mark.slow
def test_unreadable_meter_log_rows_are_recorded_and_the_run_finishes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """README: a meter reading above 100 kW, or a log row that cannot be read, is skipped and
    noted in the result's `errors`; the run itself is not failed by its meter."""
    log = tmp_path / "meter.csv"
    log.write_bytes(
        b"timestamp,watts\n"
        b"1e400,100\n"  # a timestamp that overflows to inf
        b"\xff\xfe1700000000,100\n"  # bytes that are not UTF-8
        b"1700000000,1e308\n"  # a power no meter reads
    )
    text = TINY_SS + f"telemetry: {{external_csv: {json.dumps(str(log))}}}\n"
    scenario = _scenario(tmp_path, text, name="meter.yaml")
    before = _snapshot(tmp_path)
    code = _call(["run", str(scenario), "--out", str(tmp_path / "runs")])
    _, err = capfd.readouterr()
    assert code == 0, err
    assert "Traceback" not in err and _error_lines(err) == [], err
    after = _snapshot(tmp_path)
    assert {k: after[k] for k in before} == before  # the log and the scenario untouched
    assert not fnmatch.filter(after, "*.tmp")
    (run_dir,) = (tmp_path / "runs").iterdir()
    result = json.loads((run_dir / RESULT_FILE).read_text())
    errors = [e["error"] for e in result["telemetry"]["errors"] if e["source"] == "wall"]
    assert len(errors) == 1, result["telemetry"]["errors"]
    note = errors[0]
    assert note.startswith("skipped 3 bad rows: ")
    assert f"{log}:2: timestamp out of range: '1e400'" in note
    assert f"{log}:3: not a timestamp" in note
    assert f"{log}:4: impossible power: 1e308 W" in note
    assert "# error: " in (run_dir / "telemetry.csv").read_text()


# --- signals: a run stopped by SIGINT, SIGTERM or SIGHUP ------------------------------------------

# Offline: a stopped SUT completes the rest of its one query at once, so the run ends in
# about a second (a stopped SingleStream run took 7 to 18 s here: LoadGen issues every query
# it generated, each completed empty).
LONG_OFFLINE = TINY_OFFLINE.replace("min_duration_ms: 1000", "min_duration_ms: 120000")


@dataclass(frozen=True)
class Stopped:
    root: Path
    before: dict[str, bytes | None]
    code: int
    err: str
    stop_s: float


def _start(root: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    scenario = write_scenario(root / "s.yaml", LONG_OFFLINE)
    with (root.parent / "stderr.txt").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "run", str(scenario), "--out", str(root / OUT)],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


@pytest.fixture(scope="module")
def stopped_runs(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> Iterator[dict[int, Stopped]]:
    """One long run per stop signal, all at once; each signalled once LoadGen is measuring.

    LoadGen's detail log in the run directory (the performance test's; the accuracy test's
    is in accuracy/) is the state waited for: it appears when LoadGen's timed test starts.
    """
    env = {**os.environ, "BEYOND_TOPS_CACHE": str(model_cache)}
    roots = {s: tmp_path_factory.mktemp(signal.Signals(s).name) / "run" for s in STOP_SIGNALS}
    for root in roots.values():
        root.mkdir()
    procs = {s: _start(root, env) for s, root in roots.items()}
    before = {s: _snapshot(root) for s, root in roots.items()}
    sent: dict[int, float] = {}
    try:
        deadline = time.monotonic() + 300  # three runs at once on a loaded machine
        while len(sent) < len(procs) and time.monotonic() < deadline:
            for signum, proc in procs.items():
                if signum in sent or proc.poll() is not None:
                    continue
                logs = (roots[signum] / OUT).glob("*/mlperf_log_detail.txt")
                if any(log.stat().st_size > 0 for log in logs):  # in LoadGen's timed test
                    proc.send_signal(signum)
                    sent[signum] = time.monotonic()
            time.sleep(0.05)
        ended: dict[int, float] = {}
        deadline = time.monotonic() + 120
        while len(ended) < len(procs) and time.monotonic() < deadline:
            for signum, proc in procs.items():
                if signum not in ended and proc.poll() is not None:
                    ended[signum] = time.monotonic()
            time.sleep(0.1)
        stopped = {}
        for signum, proc in procs.items():  # one still running: no code, and an endless stop
            code = -1 if proc.returncode is None else proc.returncode
            err = (roots[signum].parent / "stderr.txt").read_text(errors="replace")
            stop_s = ended.get(signum, float("inf")) - sent.get(signum, float("-inf"))
            stopped[signum] = Stopped(roots[signum], before[signum], code, err, stop_s)
        yield stopped
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize("signum", list(STOP_SIGNALS), ids=[s.name for s in STOP_SIGNALS])
def test_a_stop_signal_ends_a_run_with_one_line_and_its_code(
    signum: signal.Signals, stopped_runs: dict[int, Stopped]
) -> None:
    run = stopped_runs[signum]
    code = STOP_SIGNALS[signum].code
    assert run.code == code == 128 + signum, run.err
    assert run.stop_s < 60, "signalled in LoadGen's test, then stopped well before its 120 s"
    assert "Traceback" not in run.err, run.err
    lines = _error_lines(run.err)
    cause = f"{interrupted_cause(signum)} in the performance test, during LoadGen's run"
    (run_dir,) = (run.root / OUT).iterdir()
    assert lines == [f"error: {cause}; marked INCOMPLETE: {run_dir}"], run.err
    after = _snapshot(run.root)
    assert {k: after[k] for k in run.before} == run.before
    assert not fnmatch.filter(after, "*.tmp")
    assert (run_dir / INCOMPLETE_FILE).read_text() == f"{cause}\nexit_code: {code}\n"
    assert not (run_dir / RESULT_FILE).exists()
