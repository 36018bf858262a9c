"""Atomic writes, run directories and the versioned result.json."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import harness.files
from harness.errors import ResultError
from harness.files import INCOMPLETE_FILE, atomic_write_bytes, atomic_write_text, create_run_dir
from harness.records.layout import RESULT_FILE
from harness.records.result import ContainerImage, RunResult
from harness.results.migrate import migrate_4_to_5
from harness.results.runfile import SCHEMA_VERSION, load_result, to_dict, to_json, write_result

RUN_DIR_NAME = re.compile(r"(\d{8}T\d{6}Z)-tiny-SingleStream-([0-9a-f]{6})")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "results"
TINY_V2 = FIXTURES / "tiny-singlestream"
TINY_V3 = FIXTURES / "tiny-singlestream-v3"


def _result() -> RunResult:
    """A real result (the schema-2 fixture, migrated) with the nullable blocks varied."""
    base = load_result(TINY_V2)
    return dataclasses.replace(
        base,
        run_id="20260101T000000Z-tiny-SingleStream-abc123",
        outcome=dataclasses.replace(
            base.outcome, loadgen_errors=("error_invalid_config: Multiple conf files are used.",)
        ),
        samples_per_second=None,
        telemetry=None,
        image=ContainerImage(id="sha256:" + "cd" * 32, tag="beyond-tops/cpu:0.1.0"),
        files={"query_latencies": "query_latencies.npz", "cpu_telemetry": "cpu_telemetry.csv"},
    )


def _temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# --- atomic writes ----------------------------------------------------------------------------


def test_atomic_write_text_writes_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    atomic_write_text(path, "héllo\n")
    assert path.read_bytes() == "héllo\n".encode()
    atomic_write_text(path, "second")
    assert path.read_text(encoding="utf-8") == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_atomic_write_file_mode_follows_umask(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    old = os.umask(0o022)
    try:
        atomic_write_text(path, "{}")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644  # not mkstemp's private 0o600


def test_atomic_write_creates_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "c.bin"
    atomic_write_bytes(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"


def test_atomic_write_failure_keeps_the_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "result.json"
    path.write_text("original", encoding="utf-8")

    def fail(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="No space left on device"):
        atomic_write_text(path, "new content that never lands")
    monkeypatch.undo()
    assert path.read_text(encoding="utf-8") == "original"
    assert _temp_files(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_atomic_write_interrupted_during_write_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "data.bin"

    def interrupt(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(path, b"x" * 1000)
    monkeypatch.undo()
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


# --- run directories --------------------------------------------------------------------------


def test_create_run_dir_name(tmp_path: Path) -> None:
    before = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = create_run_dir(tmp_path / "runs", model="tiny", scenario="SingleStream")
    after = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    assert path.is_dir()
    assert path.parent == tmp_path / "runs"
    match = RUN_DIR_NAME.fullmatch(path.name)
    assert match, path.name
    assert before <= match.group(1) <= after
    assert list(path.iterdir()) == []


def test_create_run_dir_sanitises_the_model_name(tmp_path: Path) -> None:
    path = create_run_dir(tmp_path, model="my model/v2:fp16", scenario="Offline")
    assert re.fullmatch(r"\d{8}T\d{6}Z-my_model_v2_fp16-Offline-[0-9a-f]{6}", path.name)
    assert path.parent == tmp_path


def test_create_run_dir_twice_quickly_gives_two_directories(tmp_path: Path) -> None:
    first = create_run_dir(tmp_path, model="tiny", scenario="SingleStream")
    second = create_run_dir(tmp_path, model="tiny", scenario="SingleStream")
    assert first != second
    assert first.is_dir()
    assert second.is_dir()


def _fixed_clock_and_ids(monkeypatch: pytest.MonkeyPatch, ids: list[str]) -> list[str]:
    """Freeze the stamp and make token_hex return `ids` in order; return the ids handed out."""
    handed: list[str] = []

    def token_hex(nbytes: int) -> str:
        assert nbytes == 3
        handed.append(ids[len(handed)])
        return handed[-1]

    frozen = time.gmtime(0)
    monkeypatch.setattr(harness.files, "secrets", SimpleNamespace(token_hex=token_hex))
    monkeypatch.setattr(
        harness.files, "time", SimpleNamespace(strftime=time.strftime, gmtime=lambda: frozen)
    )
    return handed


def test_create_run_dir_never_reuses_an_existing_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    existing = tmp_path / "19700101T000000Z-tiny-SingleStream-aaaaaa"
    existing.mkdir()
    (existing / "result.json").write_text("{}", encoding="utf-8")
    handed = _fixed_clock_and_ids(monkeypatch, ["aaaaaa", "aaaaaa", "bbbbbb"])
    path = create_run_dir(tmp_path, model="tiny", scenario="SingleStream")
    assert path == tmp_path / "19700101T000000Z-tiny-SingleStream-bbbbbb"
    assert handed == ["aaaaaa", "aaaaaa", "bbbbbb"]
    assert (existing / "result.json").read_text(encoding="utf-8") == "{}"


def test_create_run_dir_gives_up_after_ten_collisions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "19700101T000000Z-tiny-SingleStream-aaaaaa").mkdir()
    handed = _fixed_clock_and_ids(monkeypatch, ["aaaaaa"] * 11)
    with pytest.raises(ResultError) as info:
        create_run_dir(tmp_path, model="tiny", scenario="SingleStream")
    assert str(info.value) == f"{tmp_path}: could not find a free run directory name"
    assert info.value.exit_code == 6
    assert len(handed) == 10


def test_create_run_dir_root_is_a_file(tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.write_text("not a directory", encoding="utf-8")
    with pytest.raises(ResultError) as info:
        create_run_dir(root, model="tiny", scenario="Offline")
    assert str(info.value) == f"{root}: is a file, not a directory; pass a directory as --out"
    assert info.value.exit_code == 6
    assert root.read_text(encoding="utf-8") == "not a directory"


def test_create_run_dir_root_below_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(ResultError, match=re.escape(f"{blocker / 'runs'}: cannot create")):
        create_run_dir(blocker / "runs", model="tiny", scenario="Offline")


def test_create_run_dir_unwritable_root(tmp_path: Path) -> None:
    root = tmp_path / "readonly"
    root.mkdir()
    root.chmod(0o500)
    try:
        if os.access(root, os.W_OK):
            pytest.skip("running as root: permissions do not stop writes here")
        with pytest.raises(ResultError, match=re.escape(f"{root}: results directory is not")):
            create_run_dir(root, model="tiny", scenario="Offline")
    finally:
        root.chmod(0o700)


# --- result.json ------------------------------------------------------------------------------


def test_result_round_trip(tmp_path: Path) -> None:
    result = _result()
    path = write_result(result, tmp_path)
    assert path == tmp_path / RESULT_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data == to_dict(result)
    assert (
        list(data)[:2] == ["schema_version", "run_id"] and data["schema_version"] == SCHEMA_VERSION
    )
    assert path.read_text(encoding="utf-8") == to_json(result)
    assert to_json(result).endswith("}\n")
    assert load_result(tmp_path) == result
    assert load_result(path) == result  # the file itself works too
    assert _temp_files(tmp_path) == []


def test_the_json_layout_keeps_the_outcome_at_the_top_level() -> None:
    data = to_dict(_result())
    assert data["valid"] is True and data["profile"] == "quick" and data["mode"] == "performance"
    assert data["loadgen_errors"] == ["error_invalid_config: Multiple conf files are used."]
    assert "outcome" not in data
    assert data["latency_ns"]["p90"] == 507432 and data["telemetry"] is None


def test_result_records_are_frozen_and_slotted() -> None:
    result = _result()
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.batch_size = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.outcome.valid = False  # type: ignore[misc]
    assert not hasattr(result, "__dict__") and not hasattr(result.latency_ns, "__dict__")
    assert result.valid is result.outcome.valid


def test_a_schema_2_result_is_migrated_on_load() -> None:
    v2 = json.loads((TINY_V2 / RESULT_FILE).read_text())
    result = load_result(TINY_V2)
    assert v2["schema_version"] == 2
    assert result.utilization.fraction_of_peak == v2["utilization"]["utilization"]
    assert result.runtime.cuda_graphs is False  # absent in schema 2 before CUDA graphs
    assert result.latency_ns.p90 == v2["latency_ns"]["p90"]
    assert result.accuracy.against_fp32.top1_agreement == 1.0


def test_the_checked_in_schema_3_result_is_the_migrated_schema_2_one() -> None:
    """tests/fixtures/results/tiny-singlestream-v3 is what schema 3 looked like.

    Schema 4 added the peak's basis and the attainable rate, which neither version measured:
    both load as the same schema 4 result, with those fields null.
    """
    v3 = json.loads((TINY_V3 / RESULT_FILE).read_text())
    assert v3["schema_version"] == 3 and "attainable_tflops" not in v3["utilization"]
    assert to_json(load_result(TINY_V3)) == to_json(load_result(TINY_V2))
    assert load_result(TINY_V3) == load_result(TINY_V2)


def test_a_schema_4_result_lists_no_data_files() -> None:
    """Schema 5 added ``files``; an older result did not list them, so it reads None."""
    data = to_dict(_result())
    data.pop("files")
    assert migrate_4_to_5(data | {"schema_version": 4})["files"] is None
    assert load_result(TINY_V3).files is None


def test_a_schema_3_result_reads_with_no_attainable_rate_and_no_peak_basis() -> None:
    util = load_result(TINY_V3).utilization
    assert util.peak_basis is None
    assert (util.attainable_tflops, util.attainable_method, util.fraction_of_attainable) == (
        None,
        None,
        None,
    )
    assert util.fraction_of_peak is not None  # what schema 3 had is kept


def _write_json(run_dir: Path, data: object) -> Path:
    path = run_dir / RESULT_FILE
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_load_result_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = _write_json(tmp_path, {**to_dict(_result()), "schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(ResultError) as info:
        load_result(tmp_path)
    assert str(info.value) == (
        f"{path}: schema_version {SCHEMA_VERSION + 1} was written by a newer beyond-tops "
        f"(this one reads 2 to {SCHEMA_VERSION}); "
        "upgrade beyond-tops"
    )
    assert info.value.exit_code == 6


@pytest.mark.parametrize("version", [0, 1])
def test_load_result_refuses_an_older_schema(tmp_path: Path, version: int) -> None:
    path = _write_json(tmp_path, {**to_dict(_result()), "schema_version": version})
    with pytest.raises(ResultError) as info:
        load_result(tmp_path)
    assert str(info.value) == (
        f"{path}: schema_version {version} is older than this beyond-tops reads "
        f"(2 to {SCHEMA_VERSION}); re-run it"
    )


@pytest.mark.parametrize(
    "data",
    [
        {k: v for k, v in to_dict(_result()).items() if k != "schema_version"},
        {**to_dict(_result()), "schema_version": "3"},
        {**to_dict(_result()), "schema_version": True},
        [1, 2, 3],
    ],
    ids=["missing", "string", "bool", "not-an-object"],
)
def test_load_result_needs_a_schema_version(tmp_path: Path, data: object) -> None:
    path = _write_json(tmp_path, data)
    with pytest.raises(ResultError) as info:
        load_result(tmp_path)
    assert str(info.value) == f"{path}: no schema_version; not a beyond-tops result"


def test_load_result_names_unknown_missing_or_malformed_keys(tmp_path: Path) -> None:
    data = to_dict(_result())
    path = _write_json(tmp_path, {**data, "extra": 1})
    with pytest.raises(ResultError) as info:
        load_result(tmp_path)
    assert str(info.value) == (
        f"{path}: not a schema_version {SCHEMA_VERSION} result "
        "(the file: unknown key(s) extra); re-run it"
    )
    del data["window"]
    _write_json(tmp_path, data)
    with pytest.raises(ResultError, match=re.escape("missing key(s) window")):
        load_result(tmp_path)
    data = to_dict(_result())
    data["latency_ns"]["p90"] = "fast"
    _write_json(tmp_path, data)
    with pytest.raises(ResultError, match=re.escape("latency_ns.p90: expected an integer, got a")):
        load_result(tmp_path)


def test_a_malformed_schema_2_result_says_which_version_it_read(tmp_path: Path) -> None:
    data = json.loads((TINY_V2 / RESULT_FILE).read_text())
    del data["warmup"]["min_latency_ns"]
    path = _write_json(tmp_path, data)
    with pytest.raises(ResultError) as info:
        load_result(tmp_path)
    assert str(info.value) == (
        f"{path}: not a schema_version 2 result (warmup: missing key(s) min_latency_ns); re-run it"
    )


def test_load_result_incomplete_run(tmp_path: Path) -> None:
    write_result(_result(), tmp_path)
    (tmp_path / INCOMPLETE_FILE).write_text("interrupted by Ctrl-C\n", encoding="utf-8")
    with pytest.raises(ResultError) as info:
        load_result(tmp_path)
    assert str(info.value) == (
        f"{tmp_path}: run is incomplete (interrupted by Ctrl-C); run it again"
    )
    assert info.value.exit_code == 6


def test_load_result_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ResultError) as info:
        load_result(tmp_path)
    assert str(info.value) == (
        f"{tmp_path / RESULT_FILE}: no such result; pass a run directory under results/runs/"
    )
    assert info.value.exit_code == 6


def test_load_result_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / RESULT_FILE
    path.write_text('{"schema_version": 1,', encoding="utf-8")
    with pytest.raises(ResultError, match=re.escape(f"{path}: not readable JSON (")):
        load_result(tmp_path)


# --- issue #11: umask without a race, durable renames, values checked by the schema ----------


def test_reading_the_umask_never_changes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = os.umask
    monkeypatch.setattr(os, "umask", lambda mask: calls.append(mask) or real(mask))
    old = real(0o027)
    try:
        assert harness.files._umask() == 0o027
    finally:
        real(old)
    assert calls == []  # another thread never sees a umask of 0


def test_the_umask_falls_back_where_proc_has_none(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tpython\n", encoding="ascii")  # a kernel before 4.7
    old = os.umask(0o077)
    try:
        assert harness.files._umask(status) == 0o077
        assert harness.files._umask(tmp_path / "absent") == 0o077
    finally:
        os.umask(old)


def test_an_atomic_write_syncs_the_directory_after_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    real_replace, real_fsync = os.replace, os.fsync

    def replace(src: str, dst: str) -> None:
        events.append("replace")
        real_replace(src, dst)

    def fsync(fd: int) -> None:
        is_dir = os.path.isdir(f"/proc/self/fd/{fd}") if os.path.isdir("/proc/self/fd") else False
        events.append("fsync-dir" if is_dir else "fsync-file")
        real_fsync(fd)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "fsync", fsync)
    atomic_write_text(tmp_path / "x.json", "{}")
    assert events == ["fsync-file", "replace", "fsync-dir"]


def test_the_harness_wheel_is_built_with_a_pinned_setuptools() -> None:
    root = Path(__file__).resolve().parents[2]
    script = (root / "scripts" / "wheels.sh").read_text(encoding="utf-8")
    pin = re.search(r'^SETUPTOOLS_VERSION="(\d+)\.(\d+)\.(\d+)"', script, re.MULTILINE)
    assert pin is not None
    assert "--build-constraint" in script and "setuptools==%s" in script
    requires = re.search(
        r'requires = \["setuptools>=(\d+)"\]', (root / "pyproject.toml").read_text()
    )
    assert requires is not None and int(pin.group(1)) >= int(requires.group(1))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("samples_per_second", "fast", "samples_per_second: expected a number, got a string"),
        ("samples_per_second", -5.0, "samples_per_second: -5.0 is less than the minimum of 0"),
        ("batch_size", 0, "batch_size: 0 is less than the minimum of 1"),
    ],
)
def test_load_result_checks_values_against_the_schema(
    tmp_path: Path, key: str, value: object, message: str
) -> None:
    data = to_dict(_result())
    data[key] = value
    path = _write_json(tmp_path, data)
    with pytest.raises(ResultError) as info:
        load_result(tmp_path)
    assert (
        str(info.value)
        == f"{path}: not a schema_version {SCHEMA_VERSION} result ({message}); re-run it"
    )
    assert "\n" not in str(info.value)


def test_load_result_names_the_nested_key_the_schema_refuses(tmp_path: Path) -> None:
    data = to_dict(_result())
    data["latency_ns"]["p90"] = -1
    _write_json(tmp_path, data)
    with pytest.raises(ResultError, match=re.escape("(latency_ns.p90: -1 is less than")):
        load_result(tmp_path)


def test_load_result_refuses_nan(tmp_path: Path) -> None:
    path = tmp_path / RESULT_FILE
    path.write_text(to_json(_result()).replace('"batch_size": 1', '"batch_size": NaN'))
    with pytest.raises(ResultError, match=re.escape(f"{path}: batch_size is NaN, not a finite")):
        load_result(tmp_path)


@pytest.mark.parametrize("literal", ["1e999", "-1e999", "Infinity"])
def test_load_result_refuses_numbers_that_overflow_to_infinity(
    tmp_path: Path, literal: str
) -> None:
    path = tmp_path / RESULT_FILE
    path.write_text(to_json(_result()).replace('"batch_size": 1', f'"batch_size": {literal}'))
    with pytest.raises(ResultError, match=re.escape(f"{path}: batch_size is ")):
        load_result(tmp_path)


def test_a_huge_incomplete_marker_is_read_bounded(tmp_path: Path) -> None:
    (tmp_path / INCOMPLETE_FILE).write_text("interrupted (SIGTERM)\x1b[2J\n" + "x" * 10**7)
    marker = harness.files.read_incomplete(tmp_path)
    assert marker is not None
    assert marker.cause == "interrupted (SIGTERM)\\x1b[2J"  # shown, not obeyed
    with pytest.raises(ResultError, match="run is incomplete"):
        load_result(tmp_path)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_finite_result_is_an_error_not_nan_in_the_file(tmp_path: Path, value: float) -> None:
    result = dataclasses.replace(_result(), samples_per_second=value)
    with pytest.raises(ResultError, match=r"samples_per_second is not a finite number"):
        write_result(result, tmp_path)
    assert not (tmp_path / RESULT_FILE).exists()


def test_jsonschema_is_a_runtime_dependency_locked_in_every_image() -> None:
    root = Path(__file__).resolve().parents[2]
    import tomllib

    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert "jsonschema>=4.20,<5" in project["dependencies"]
    assert all(not r.startswith("jsonschema") for r in project["optional-dependencies"]["dev"])
    needed = ("jsonschema", "jsonschema-specifications", "referencing", "rpds-py", "attrs")
    for hw in ("cpu", "nvidia", "rocm"):
        lock = (root / "docker" / hw / "requirements.lock").read_text()
        for name in needed:
            assert re.search(rf"^{name}==\S+ \\$", lock, re.MULTILINE), (hw, name)
