"""Issue #23: hostile inputs to `harness fleet slurm|k8s|status|collect|cancel|task`, as a table.

Each case makes a hostile input under tmp_path (an option, a suite, or a planned fleet
directory whose fleet.json, task.json or task-result.json was edited by someone with write
access to the shared filesystem) and runs `harness` on it, bounded in time.

ERRORS: one `error: ` line naming the option, file or key, the exit code errors.py gives,
no traceback, and nothing written: every file that was there unchanged, and nothing new but
an empty --out. ROWS: a damaged task record never stops `status` or `collect`: its own
task's line says so (naming the file and the key), the other tasks are still read and
merged, the command exits FLEET_INCOMPLETE, and nothing is written outside the fleet.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ERROR_CODES, FLEET_INCOMPLETE, ConfigError, ResultError
from harness.foreign import MAX_JSON_BYTES
from tests.conftest import REPO, TINY_SS, harness_dir
from tests.integration.test_bad_input_corpus import OUT, _call, _error_lines

CONFIG = ERROR_CODES[ConfigError].code
RESULT = ERROR_CODES[ResultError].code
RUN_FIXTURE = REPO / "tests" / "fixtures" / "results" / "tiny-singlestream-v3"
FLEETS = "fleets"  # where setups plan the fleets they then damage (made before the snapshot)
INJECTED = "touch PWNED"

Setup = Callable[[Path], list[str]]
Edit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Case:
    name: str
    setup: Setup
    code: int
    fragments: tuple[str, ...]


def _snapshot(root: Path) -> dict[str, bytes | str | None]:
    """Every path under root: a file's bytes, a link's target, a FIFO or device by its kind.

    The corpus's own snapshot reads every file, which would block on a FIFO for ever.
    """
    found: dict[str, bytes | str | None] = {}
    for path in sorted(root.rglob("*")):
        mode = path.lstat().st_mode
        key = str(path.relative_to(root))
        if stat.S_ISLNK(mode):
            found[key] = f"-> {os.readlink(path)}"
        elif stat.S_ISREG(mode):
            found[key] = path.read_bytes()
        else:
            found[key] = None if stat.S_ISDIR(mode) else f"special {stat.S_IFMT(mode):o}"
    return found


def _suite(tmp: Path, name: str = "hostile") -> Path:
    (tmp / "ss.yaml").write_text(TINY_SS)
    suite = tmp / "suite.yaml"
    suite.write_text(f"name: {json.dumps(name)}\nprofile: quick\nscenarios: [ss.yaml]\n")
    return suite


def _slurm(*options: str, suite: str = "hostile", out: str = OUT) -> Setup:
    """`harness fleet slurm` of a one-scenario suite, with `options`."""

    def setup(tmp: Path) -> list[str]:
        base = ["fleet", "slurm", str(_suite(tmp, suite)), "--partition", "debug"]
        return [*base, *options, "--out", str(tmp / out), "--dry-run", "--harness", "harness"]

    return setup


def _replace(option: str, value: str) -> Setup:
    """`harness fleet slurm` with `option` given `value` (one given already is replaced)."""

    def setup(tmp: Path) -> list[str]:
        argv = _slurm()(tmp)
        if option in argv:
            del argv[argv.index(option) : argv.index(option) + 2]
        return [*argv, f"{option}={value}"]  # `=`: a value may begin with `--`

    return setup


def _k8s(*options: str, volume: tuple[str, str] = ("--claim", "bt-results")) -> Setup:
    """`harness fleet k8s` of a one-scenario suite, with `options` (one --image replaced)."""

    def setup(tmp: Path) -> list[str]:
        image = [] if "--image" in options else ["--image", "bt:cpu"]
        base = ["fleet", "k8s", str(_suite(tmp)), *image, *volume]
        given = [f"{o}={v}" for o, v in zip(options[::2], options[1::2], strict=True)]
        return [*base, *given, "--out", str(tmp / OUT)]

    return setup


def _planned(tmp: Path, nodes: int = 2) -> Path:
    argv = ["fleet", "slurm", str(_suite(tmp)), "--partition", "p", "--nodes", str(nodes)]
    return harness_dir([*argv, "--runner", "local", "--out", str(tmp / FLEETS), "--dry-run"])


def _edit_json(path: Path, edit: Edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))  # NaN is written as NaN


def _fleet_json(
    verb: str, edit: Edit | None = None, text: Callable[[str], str] | None = None
) -> Setup:
    """`harness fleet VERB` of a planned fleet whose fleet.json was edited."""

    def setup(tmp: Path) -> list[str]:
        fleet = _planned(tmp)
        path = fleet / "fleet.json"
        if edit is not None:
            _edit_json(path, edit)
        if text is not None:
            path.write_text(text(path.read_text()))
        return ["fleet", verb, str(fleet)]

    return setup


def _task_json(edit: Edit, env: str | None = None) -> Setup:
    """`harness fleet task FLEET --index 0` of a planned fleet whose task.json was edited."""

    def setup(tmp: Path) -> list[str]:
        fleet = _planned(tmp)
        _edit_json(fleet / "tasks" / "000" / "task.json", edit)
        return ["fleet", "task", str(fleet), "--index", "0"]

    return setup


def _special(name: str, make: Callable[[Path], None]) -> Setup:
    """`harness fleet status` of a fleet whose `name` (fleet.json, ...) is made by `make`."""

    def setup(tmp: Path) -> list[str]:
        fleet = _planned(tmp)
        (fleet / name).unlink()
        make(fleet / name)
        return ["fleet", "status", str(fleet)]

    return setup


def _set(*keys: str | int, value: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        target: Any = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


def _submissions(*items: dict[str, Any]) -> Edit:
    return _set("scheduler", "submissions", value=list(items))


def _model_path(path: str, outside: bool = False) -> Setup:
    """`fleet task` of a task.json whose model path is `path` (a model made outside)."""

    def edit(data: dict[str, Any]) -> None:
        data["entries"][0]["scenario"]["model"].update(zoo=None, path=path)

    def setup(tmp: Path) -> list[str]:
        (tmp / "outside.onnx").write_bytes(b"not the fleet's model")
        return _task_json(edit)(tmp)

    return setup


def _big(path: Path) -> None:
    path.write_text('{"pad": "' + "x" * MAX_JSON_BYTES + '"}')


PLAN_CASES = [
    Case(
        "slurm-partition-semicolon",
        _replace("--partition", f"debug;{INJECTED}"),
        CONFIG,
        ("--partition", f"'debug;{INJECTED}'", "[A-Za-z0-9][A-Za-z0-9._-]{0,63}"),
    ),
    Case(
        "slurm-partition-newline",
        _replace("--partition", "debug\n#SBATCH --time=1"),
        CONFIG,
        ("--partition", "'debug\\n#SBATCH --time=1'", "a partition name"),
    ),
    Case(
        "slurm-account-backquote",
        _replace("--account", "lab`id`"),
        CONFIG,
        ("--account", "'lab`id`'", "an account name"),
    ),
    Case(
        "slurm-nodelist-command",
        _replace("--nodelist", "a,$(id)"),
        CONFIG,
        ("--nodelist", "'$(id)'", "a node name"),
    ),
    Case(
        "slurm-nodelist-unbalanced",
        _replace("--nodelist", "gpu[01-04"),
        CONFIG,
        ("--nodelist", "'gpu[01-04'", "unbalanced brackets"),
    ),
    Case(
        "slurm-nodelist-backwards-range",
        _replace("--nodelist", "gpu[4-1]"),
        CONFIG,
        ("--nodelist", "'4-1' is not a range"),
    ),
    Case(
        "slurm-nodelist-newline",
        _replace("--nodelist", f"a\n{INJECTED}"),
        CONFIG,
        ("--nodelist", "is not a node name"),
    ),
    Case(
        "slurm-image-semicolon",
        _replace("--image", "repo:tag; rm -rf x"),
        CONFIG,
        ("--image", "'repo:tag; rm -rf x'", "Docker's grammar"),
    ),
    Case(
        "slurm-image-newline",
        _replace("--image", f"repo:tag\n{INJECTED}"),
        CONFIG,
        ("--image", "is not an image reference"),
    ),
    Case(
        "slurm-sbatch-newline",
        _replace("--sbatch", f"--qos=high\n{INJECTED}"),
        CONFIG,
        ("--sbatch", "is not one sbatch option"),
    ),
    Case(
        "slurm-sbatch-overrides-output",
        _replace("--sbatch", "--output=/tmp/elsewhere"),
        CONFIG,
        ("--sbatch", "would set --output"),
    ),
    Case(
        "slurm-sbatch-abbreviates-time",
        _replace("--sbatch", "--tim=1"),
        CONFIG,
        ("--sbatch", "would set --time"),
    ),
    Case(
        "slurm-sbatch-qos-semicolon",
        _replace("--sbatch", "--qos=a;b"),
        CONFIG,
        ("--qos", "'a;b'", "a QOS name"),
    ),
    Case(
        "slurm-suite-name-newline",  # refused by the suite loader or the fleet's grammar
        _slurm(suite=f"x\n{INJECTED}"),
        CONFIG,
        ("suite.yaml: name",),
    ),
    Case(
        "slurm-suite-name-semicolon",
        _slurm(suite=f"x;{INJECTED}"),
        CONFIG,
        ("suite.yaml: name", f"'x;{INJECTED}'", "a suite name"),
    ),
    Case(
        "slurm-suite-name-path",
        _slurm(suite="../../escape"),
        CONFIG,
        ("suite.yaml: name", "'../../escape'", "a suite name"),
    ),
    Case("slurm-out-newline", _slurm(out=f"o\n{INJECTED}"), CONFIG, ("--out", "control character")),
    Case("slurm-out-backslash", _slurm(out="o\\x"), CONFIG, ("--out", "backslash")),
    Case(
        "slurm-harness-newline",
        _replace("--harness", f"harness\n{INJECTED}"),
        CONFIG,
        ("--harness", "control character"),
    ),
    Case(
        "slurm-harness-unbalanced-quote",
        _replace("--harness", "'harness"),
        CONFIG,
        ("--harness", "cannot be split"),
    ),
    Case(
        "k8s-image-semicolon",
        _k8s("--image", "repo:tag; rm -rf x"),
        CONFIG,
        ("--image", "Docker's grammar"),
    ),
    Case(
        "k8s-namespace-not-a-label",
        _k8s("--namespace", "Bad_NS"),
        CONFIG,
        ("--namespace", "'Bad_NS'", "DNS-1123 label"),
    ),
    Case("k8s-cpu-injection", _k8s("--cpu", "8; rm -rf x"), CONFIG, ("--cpu", "is not a quantity")),
    Case(
        "k8s-host-path-newline",
        _k8s(volume=("--host-path", "/data\nx")),
        CONFIG,
        ("--host-path", "control character"),
    ),
    Case(
        "k8s-node-selector-space",
        _k8s("--node-selector", "a b=c"),
        CONFIG,
        ("--node-selector", "is not a label key"),
    ),
    Case(
        "k8s-parallelism-zero",
        _k8s("--parallelism", "0", "--nodes", "2"),
        CONFIG,
        ("--parallelism", "must be 1..2", "got 0"),
    ),
]

READ_CASES = [
    Case(
        "status-fleet-json-nan",
        _fleet_json("status", _set("tasks", value=float("nan"))),
        RESULT,
        ("fleet.json", "NaN is not a JSON number"),
    ),
    Case(
        "status-fleet-json-overflow",
        _fleet_json("status", text=lambda t: t.replace('"time_min": 60', '"time_min": 1e999')),
        RESULT,
        ("fleet.json", "1e999", "not a finite number"),
    ),
    Case(
        "status-fleet-json-a-list",
        _fleet_json("status", text=lambda t: "[1, 2]"),
        RESULT,
        ("fleet.json", "expected a JSON object"),
    ),
    Case(
        "status-fleet-json-indices-abc",
        _fleet_json("status", _submissions({"job_id": "7", "indices": ["abc"]})),
        RESULT,
        ("fleet.json", "submissions[0]: indices[0]", "expected a whole number"),
    ),
    Case(
        "collect-fleet-json-indices-integer",
        _fleet_json("collect", _submissions({"job_id": "7", "indices": 3})),
        RESULT,
        ("fleet.json", "submissions[0]: indices", "expected a list"),
    ),
    Case(
        "cancel-fleet-json-job-id-list",
        _fleet_json("cancel", _submissions({"job_id": "7,8", "indices": [0]})),
        RESULT,
        ("fleet.json", "submissions[0]: job_id", "not a Slurm job ID"),
    ),
    Case(
        "status-fleet-json-task-index-string",
        _fleet_json("status", _set("tasks", 0, "index", value="0")),
        RESULT,
        ("fleet.json", "tasks[0]: index", "expected a whole number"),
    ),
    Case(
        "collect-fleet-json-suite-newline",
        _fleet_json("collect", _set("suite", value=f"x\n{INJECTED}")),
        RESULT,
        ("fleet.json", "a suite name"),
    ),
    Case(
        "status-fleet-json-scheduler-string",
        _fleet_json("status", _set("scheduler", value="slurm")),
        RESULT,
        ("fleet.json: scheduler", "expected a mapping"),
    ),
    Case(
        "status-fleet-json-oversized",
        _special("fleet.json", _big),
        RESULT,
        ("fleet.json", "larger than 16 MiB"),
    ),
    Case(
        "status-fleet-json-fifo",
        _special("fleet.json", lambda p: os.mkfifo(p)),
        RESULT,
        ("fleet.json", "is a FIFO, not a regular file"),
    ),
    Case(
        "status-fleet-json-links-to-a-device",
        _special("fleet.json", lambda p: p.symlink_to("/dev/zero")),
        RESULT,
        ("fleet.json", "is a device, not a regular file"),
    ),
    Case(
        "task-json-model-path-escapes",
        _model_path("../../outside.onnx"),
        CONFIG,
        ("task.json: entries[0]: scenario.model.path", "outside.onnx", "leads out of"),
    ),
    Case(
        "task-json-model-path-absolute",
        _model_path("/etc/passwd"),
        CONFIG,
        ("task.json: entries[0]: scenario.model.path", "'/etc/passwd' is absolute"),
    ),
    Case(
        "task-json-index-string",
        _task_json(_set("index", value="0")),
        CONFIG,
        ("task.json: index", "expected a whole number"),
    ),
    Case(
        "task-json-image-injection",
        _task_json(_set("image", value="x; rm -rf y")),
        CONFIG,
        ("task.json: image", "Docker's grammar"),
    ),
    Case(
        "task-json-trials-infinite",
        _task_json(_set("entries", 0, "trials", value=float("inf"))),
        RESULT,
        ("task.json", "Infinity is not a JSON number"),
    ),
]

ERROR_CASES = [*PLAN_CASES, *READ_CASES]


def test_the_table_is_large_and_its_names_unique() -> None:
    assert len(ERROR_CASES) + len(ROW_CASES) >= 40
    names = [case.name for case in ERROR_CASES] + [case[0] for case in ROW_CASES]
    assert len(set(names)) == len(names)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", ERROR_CASES, ids=[case.name for case in ERROR_CASES])
def test_hostile_fleet_input(
    case: Case, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    argv = case.setup(tmp_path)
    before = _snapshot(tmp_path)
    capfd.readouterr()
    code = _call(argv)
    out, err = capfd.readouterr()
    after = _snapshot(tmp_path)

    assert code == case.code, err
    assert "Traceback" not in err + out, err
    lines = _error_lines(err)
    assert len(lines) == 1, err
    for fragment in case.fragments:
        assert fragment in lines[0], lines[0]
    assert {k: after.get(k, b"<gone>") for k in before} == before, "a file changed or was lost"
    assert set(after) - set(before) <= {OUT}, f"left behind: {sorted(set(after) - set(before))}"
    assert not (tmp_path / OUT).exists() or not any((tmp_path / OUT).iterdir())
    assert not list(tmp_path.rglob("PWNED"))


# --- damaged task records: the task's row says so, the others are merged ------------------------

Record = Callable[[Path, Path], Any]  # (attempt directory, outside directory) -> the record


def _record(entries: list[Any] | None = None, **fields: Any) -> dict[str, Any]:
    data = {
        "schema_version": 1,
        "index": 1,
        "placement": {"scheduler": "none", "node": "n2"},
        "runner": "local",
        "started_utc": "2026-12-01T10:00:00Z",
        "finished_utc": "2026-12-01T10:01:00Z",
        "exit_code": 0,
        "cause": None,
        "entries": [{"name": "tiny-ss-test", "run": "run", "exit_code": 0, "error": None}]
        if entries is None
        else entries,
    }
    return {**data, **fields}


def _run_named(run: Callable[[Path, Path], str]) -> Record:
    """A record whose one entry's run is `run(attempt, outside)`; a real run lies outside."""

    def make(attempt: Path, outside: Path) -> dict[str, Any]:
        entry = {"name": "tiny-ss-test", "run": run(attempt, outside), "exit_code": 0}
        return _record([{**entry, "error": None}])

    return make


def _linked(attempt: Path, outside: Path) -> str:
    (attempt / "run").symlink_to(outside / "run", target_is_directory=True)
    return "run"


def _linked_result(attempt: Path, outside: Path) -> str:
    shutil.copytree(RUN_FIXTURE, attempt / "run")
    (attempt / "run" / "result.json").unlink()
    (attempt / "run" / "result.json").symlink_to(outside / "run" / "result.json")
    return "run"


def _dots(attempt: Path, outside: Path) -> str:
    return os.path.relpath(outside / "run", attempt)


ROW_CASES: list[tuple[str, str, Callable[[Path, Path], Any], tuple[str, ...]]] = [
    ("collect-run-dotdot", "collect", _run_named(_dots), ("entries[0]: run", "leads out of")),
    (
        "collect-run-absolute",
        "collect",
        _run_named(lambda a, o: str(o / "run")),
        ("entries[0]: run", "leads out of the attempt directory"),
    ),
    ("collect-run-links-out", "collect", _run_named(_linked), ("entries[0]: run", "leads out of")),
    (
        "collect-result-links-out",
        "collect",
        _run_named(_linked_result),
        ("result.json", "leads out of"),
    ),
    (
        "status-placement-string",
        "status",
        lambda a, o: _record(placement="node1"),
        ("placement", "expected a mapping"),
    ),
    (
        "status-entry-integer",
        "status",
        lambda a, o: _record(entries=[5]),
        ("entries[0]", "expected a mapping"),
    ),
    (
        "collect-entry-run-integer",
        "collect",
        lambda a, o: _record(entries=[{"name": "tiny-ss-test", "run": 7}]),
        ("entries[0]: run", "expected a string"),
    ),
    (
        "status-exit-code-nan",
        "status",
        lambda a, o: _record(exit_code=float("nan")),
        ("NaN is not a JSON number",),
    ),
    ("status-record-a-list", "status", lambda a, o: [1, 2], ("expected a JSON object",)),
    (
        "status-cause-escape",
        "status",
        lambda a, o: _record(cause="\x1b]0;owned\x07"),
        ("cause", "control character"),
    ),
    (
        "status-job-id-injection",
        "status",
        lambda a, o: _record(placement={"scheduler": "slurm", "node": "n", "job_id": "1;id"}),
        ("placement: job_id", "not a Slurm job ID"),
    ),
    ("status-record-nested-deep", "status", lambda a, o: "[" * 200_000, ("nested too deep",)),
    (
        "collect-record-oversized",
        "collect",
        lambda a, o: "pad" * MAX_JSON_BYTES,
        ("larger than 16 MiB",),
    ),
]


def _damaged(tmp: Path, record: Callable[[Path, Path], Any]) -> tuple[Path, Path]:
    """A 2-task fleet: task 0 left a real run; task 1's record is `record`'s."""
    fleet = _planned(tmp)
    outside = tmp / "outside"
    shutil.copytree(RUN_FIXTURE, outside / "run")
    good = fleet / "tasks" / "000" / "local"
    good.mkdir()
    shutil.copytree(RUN_FIXTURE, good / "run")
    (good / "task-result.json").write_text(json.dumps(_record(index=0)))
    attempt = fleet / "tasks" / "001" / "local"
    attempt.mkdir()
    data = record(attempt, outside)
    text = data if isinstance(data, str) else json.dumps(data)
    (attempt / "task-result.json").write_text(text)
    return fleet, outside


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("name", "verb", "record", "fragments"), ROW_CASES, ids=[case[0] for case in ROW_CASES]
)
def test_a_damaged_task_record_is_its_own_tasks_row(
    name: str,
    verb: str,
    record: Callable[[Path, Path], Any],
    fragments: tuple[str, ...],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    fleet, _ = _damaged(tmp_path, record)
    before = {k: v for k, v in _snapshot(tmp_path).items() if not k.startswith(FLEETS)}
    capfd.readouterr()
    code = _call(["fleet", verb, str(fleet)])
    out, err = capfd.readouterr()
    after = {k: v for k, v in _snapshot(tmp_path).items() if not k.startswith(FLEETS)}

    assert code == FLEET_INCOMPLETE.code, out + err
    assert "Traceback" not in out + err, err
    assert _error_lines(err) == [], err
    rows = [line for line in out.splitlines() if line.startswith(("task   1", "| 1 |"))]
    assert rows and "DAMAGED" in rows[0] and "task-result.json" in rows[0], out
    for fragment in fragments:
        assert fragment in out, out
    assert after == before, "a file outside the fleet directory changed or appeared"
    assert "\x1b" not in out
    if verb == "collect":
        merged = json.loads((fleet / "fleet-merged.json").read_text())
        rows = {r["task"]: r for r in merged["rows"]}
        assert rows[0]["value"] is not None  # the good task is still merged
        assert rows[1]["value"] is None and rows[1]["trials"] == 0  # the outside run is not
        assert {t["index"]: t["state"] for t in merged["tasks"]}[1] == "DAMAGED"
        assert not fnmatch.filter(os.listdir(fleet), "*.tmp")
