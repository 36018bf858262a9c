"""The parent side of the job protocol, with a scripted launcher standing in for workers.

Real workers run in tests/integration; here each launch plays one worker's outcome (files in
its run directory and an exit code), so every branch of the protocol is exercised exactly.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_scenario
from harness.errors import Interrupted, StopSignals
from harness.execution import worker
from harness.execution.campaign import Campaign, is_out_of_memory, run_batch_sweep, run_trials
from harness.execution.pipeline import WorkerError, launch_worker, run_one
from harness.files import Incomplete, mark_complete, mark_incomplete, read_incomplete
from harness.handoff import PeakSearch, write_peak
from harness.records.job import Job, read_job
from harness.records.request import Expectation, RunRequest
from harness.results.groupfile import read_sweep, read_trials
from harness.results.groups import load_group
from tests.conftest import TINY_OFFLINE, TINY_SS, write_scenario

Step = Callable[[Path], int]  # one worker's behaviour: given its run directory, its exit code


class ScriptedLauncher:
    """Plays one scripted worker per launch and keeps the jobs it was handed."""

    def __init__(self, *steps: Step) -> None:
        self.steps, self.jobs = list(steps), []

    def __call__(self, job_path: Path) -> int:
        job = read_job(job_path)
        self.jobs.append(job)
        return self.steps.pop(0)(job.run_dir)


def accuracy_ok(run_dir: Path) -> int:
    (run_dir / "user.conf").write_text("")
    (run_dir / "accuracy.json").write_text("{}")
    return 0


def result(valid: bool) -> Step:
    def step(run_dir: Path) -> int:
        (run_dir / "user.conf").write_text("")
        (run_dir / "mlperf_log_detail.txt").write_text("attempt log")
        (run_dir / "result.json").write_text(json.dumps({"valid": valid}))
        mark_complete(run_dir)
        return 0 if valid else 1

    return step


def retry(run_dir: Path) -> int:
    (run_dir / "user.conf").write_text("first")
    (run_dir / "mlperf_log_detail.txt").write_text("first attempt log")
    (run_dir / "retry.json").write_text('{"latency_ns": 2000.0, "samples_per_second": 99.0}')
    return 0


def fails(cause: str, code: int, *, measured: bool) -> Step:
    def step(run_dir: Path) -> int:
        if measured:
            (run_dir / "user.conf").write_text("")
        mark_incomplete(run_dir, f"failed: {cause}", code)
        return code

    return step


@pytest.fixture
def run_request(tmp_path: Path) -> RunRequest:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    return RunRequest(
        scenario=scenario, scenario_path=tmp_path / "s.yaml", profile="quick", hw="cpu"
    )


def test_accuracy_then_performance_each_from_its_own_job_file(
    run_request: RunRequest, tmp_path: Path
) -> None:
    launch = ScriptedLauncher(accuracy_ok, result(valid=True))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert run_one(run_request, run_dir, launch=launch) == run_dir
    assert [(j.test, j.run_dir) for j in launch.jobs] == [
        ("accuracy", (run_dir / "accuracy").resolve()),
        ("performance", run_dir.resolve()),
    ]
    assert read_job(run_dir / "job.json") == launch.jobs[1]  # the record of what ran
    assert read_job(run_dir / "accuracy" / "job.json") == launch.jobs[0]
    assert (
        launch.jobs[1].request.scenario == run_request.scenario and launch.jobs[1].expected is None
    )
    assert read_incomplete(run_dir) is None


def test_an_invalid_run_is_an_outcome_not_a_failure(
    run_request: RunRequest, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run_one(run_request, run_dir, launch=ScriptedLauncher(accuracy_ok, result(valid=False)))
    assert json.loads((run_dir / "result.json").read_text()) == {"valid": False}


def test_a_first_attempt_sized_too_small_is_set_aside_and_run_again(
    run_request: RunRequest, tmp_path: Path
) -> None:
    launch = ScriptedLauncher(accuracy_ok, retry, result(valid=True))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run_one(run_request, run_dir, launch=launch)
    second = launch.jobs[2]
    assert (second.attempt, second.previous_attempt) == (2, "attempt-1")
    assert second.expected == Expectation(latency_ns=2000.0, samples_per_second=99.0)
    first = run_dir / "attempt-1"
    assert (first / "mlperf_log_detail.txt").read_text() == "first attempt log"
    assert read_job(first / "job.json").attempt == 1
    assert (first / "retry.json").is_file() and not (run_dir / "retry.json").exists()
    assert (run_dir / "mlperf_log_detail.txt").read_text() == "attempt log"
    assert (run_dir / "accuracy" / "accuracy.json").is_file()  # the accuracy test stays


def test_a_failure_while_measuring_keeps_the_logs_and_the_cause(
    run_request: RunRequest, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    launch = ScriptedLauncher(accuracy_ok, fails("inference failed: device lost", 5, measured=True))
    with pytest.raises(WorkerError) as err:
        run_one(run_request, run_dir, launch=launch)
    assert (err.value.cause, err.value.exit_code) == ("inference failed: device lost", 5)
    assert str(err.value) == f"{run_dir}: run failed: inference failed: device lost"
    recorded = read_incomplete(run_dir)
    assert recorded is not None and recorded.exit_code == 5
    assert "device lost" in recorded.cause


def test_a_failure_before_measuring_writes_nothing(run_request: RunRequest, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    launch = ScriptedLauncher(fails("HW=nvidia: no device", 4, measured=False))
    with pytest.raises(WorkerError) as err:
        run_one(run_request, run_dir, launch=launch)
    assert err.value.exit_code == 4 and len(launch.jobs) == 1  # the performance test never ran
    assert not run_dir.exists()


def test_a_worker_killed_by_the_kernel_is_named_so(run_request: RunRequest, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(WorkerError) as err:
        run_one(run_request, run_dir, launch=ScriptedLauncher(accuracy_ok, lambda _: -9))
    assert err.value.cause == "killed by signal 9" and is_out_of_memory(err.value)
    assert err.value.exit_code == 5


STOPS = [
    (signal.SIGINT, "interrupted (Ctrl-C)", 130),
    (signal.SIGTERM, "interrupted (SIGTERM)", 143),
    (signal.SIGHUP, "interrupted (SIGHUP)", 129),
]


@pytest.mark.parametrize(("signum", "cause", "code"), STOPS, ids=["INT", "TERM", "HUP"])
def test_a_signal_in_a_worker_stops_the_parent_and_marks_the_run(
    signum: int, cause: str, code: int, run_request: RunRequest, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(Interrupted) as stopped:
        run_one(
            run_request,
            run_dir,
            launch=ScriptedLauncher(accuracy_ok, fails("x", code, measured=True)),
        )
    assert stopped.value.signum == signum
    recorded = read_incomplete(run_dir)
    # the worker recorded no phase of its own: the parent names the test it was in
    where = f"{cause} in the performance test"
    assert recorded is not None and (recorded.cause, recorded.exit_code) == (where, code)
    assert stopped.value.cause == where and stopped.value.marked == (run_dir,)


@pytest.mark.parametrize(("signum", "cause", "code"), STOPS, ids=["INT", "TERM", "HUP"])
def test_a_signal_to_the_parent_is_forwarded_to_its_worker_and_marks_the_run(
    signum: int,
    cause: str,
    code: int,
    run_request: RunRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[int] = []

    class Child:  # a worker still running when the parent's signal arrives
        def __init__(self, *args: object, **kwargs: object) -> None:
            self.waits = 0

        def __enter__(self) -> Child:
            return self

        def __exit__(self, *exc_info: object) -> None:
            pass

        def wait(self) -> int:
            self.waits += 1
            if self.waits == 1:
                (run_dir / "user.conf").write_text("")  # LoadGen had started
                raise Interrupted(signum)  # what StopSignals raises in the parent
            return code

        def send_signal(self, number: int) -> None:
            sent.append(number)

    monkeypatch.setattr(subprocess, "Popen", Child)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(Interrupted):
        run_one(run_request, run_dir, launch=launch_worker)
    assert sent == [signum]
    recorded = read_incomplete(run_dir)
    where = f"{cause} in the accuracy test"  # the first worker, which recorded no phase
    assert recorded is not None and (recorded.cause, recorded.exit_code) == (where, code)


@pytest.mark.parametrize(("signum", "cause", "code"), STOPS, ids=["INT", "TERM", "HUP"])
def test_a_worker_names_the_signal_that_stopped_it(
    signum: int,
    cause: str,
    code: int,
    run_request: RunRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def interrupted(job: Job, phases: object) -> int:
        raise KeyboardInterrupt  # LoadGen's wait raises a plain one, whatever the signal

    monkeypatch.setattr(worker, "_outcome", interrupted)
    stops = StopSignals()
    stops.received = signum
    job = Job(
        request=dataclasses.replace(run_request, scenario_path=None),
        test="performance",
        run_dir=tmp_path,
    )
    assert worker.execute(job, stops=stops) == code
    recorded = read_incomplete(tmp_path)
    where = f"{cause} in the performance test, while its worker started"
    assert recorded is not None and (recorded.cause, recorded.exit_code) == (where, code)


def test_a_worker_that_exits_0_without_a_result_fails_the_run(
    run_request: RunRequest, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(WorkerError, match="left no result"):
        run_one(run_request, run_dir, launch=ScriptedLauncher(accuracy_ok, accuracy_ok))


# ---- trials and sweeps: a group records its own state ----

MEASURED = Path(__file__).resolve().parents[1] / "fixtures/reports/trials-xeon/trial-1/result.json"


def measured(run_dir: Path) -> int:
    (run_dir / "user.conf").write_text("")
    shutil.copy(MEASURED, run_dir / "result.json")
    mark_complete(run_dir)
    return 0


def crashed(message: str) -> Step:
    def step(run_dir: Path) -> int:
        (run_dir / "user.conf").write_text("")
        mark_incomplete(run_dir, f"crashed: {message}", 70)
        return 70

    return step


def a_campaign(
    run_request: RunRequest, tmp_path: Path, *steps: Step, text: str = TINY_SS
) -> Campaign:
    scenario = load_scenario(write_scenario(tmp_path / "c.yaml", text))
    run_request = dataclasses.replace(run_request, scenario=scenario)
    return Campaign(
        request=run_request, out_root=tmp_path / "runs", launch=ScriptedLauncher(*steps)
    )


def test_a_group_is_incomplete_while_its_trials_run(
    run_request: RunRequest, tmp_path: Path
) -> None:
    seen: list[bool] = []

    def watched(run_dir: Path) -> int:
        seen.append((run_dir.parent / "INCOMPLETE").is_file())
        return measured(run_dir)

    job = a_campaign(run_request, tmp_path, accuracy_ok, watched, accuracy_ok, watched)
    group = run_trials(job, 2)
    assert seen == [True, True] and not (group / "INCOMPLETE").exists()
    trials = read_trials(group / "trials.json")
    assert trials.complete and trials.failure is None and trials.runs == ("trial-1", "trial-2")


def test_a_group_that_failed_in_trial_3_keeps_its_two_good_trials(
    run_request: RunRequest, tmp_path: Path
) -> None:
    steps = [accuracy_ok, measured] * 2 + [accuracy_ok, lambda _: -9]
    job = a_campaign(run_request, tmp_path, *steps)
    with pytest.raises(WorkerError):
        run_trials(job, 3)
    (group,) = (tmp_path / "runs").iterdir()
    recorded = read_incomplete(group)
    assert recorded == Incomplete(cause="trial-3 failed: killed by signal 9", exit_code=5)
    trials = read_trials(group / "trials.json")
    assert not trials.complete and trials.failure == "trial-3 failed: killed by signal 9"
    assert trials.runs == ("trial-1", "trial-2") and len(trials.stats.values) == 2
    loaded = load_group(group)  # what report and compare read
    assert loaded.kind == "trials" and len(loaded.runs.results) == 2


def test_a_group_stopped_by_sigterm_says_so(run_request: RunRequest, tmp_path: Path) -> None:
    job = a_campaign(
        run_request, tmp_path, accuracy_ok, measured, accuracy_ok, fails("x", 143, measured=True)
    )
    with pytest.raises(Interrupted):
        run_trials(job, 3)
    (group,) = (tmp_path / "runs").iterdir()
    assert read_incomplete(group) == Incomplete(
        cause="trial-2 interrupted (SIGTERM) in the performance test", exit_code=143
    )
    assert read_trials(group / "trials.json").runs == ("trial-1",)


def test_a_sweep_that_fails_keeps_its_points_and_says_why(
    run_request: RunRequest, tmp_path: Path
) -> None:
    steps = [accuracy_ok, measured, accuracy_ok, fails("device lost", 4, measured=True)]
    job = a_campaign(run_request, tmp_path, *steps, text=TINY_OFFLINE)
    with pytest.raises(WorkerError):
        run_batch_sweep(job, 1, batches=[1, 2, 4])
    (sweep,) = (tmp_path / "runs").iterdir()
    assert read_incomplete(sweep) == Incomplete(cause="bs-2 failed: device lost", exit_code=4)
    data = read_sweep(sweep / "sweep.json")
    assert not data.complete and data.failure == "failed: device lost"
    assert [p.batch_size for p in data.points] == [1] and data.stopped == "error"
    assert data.limit is not None and data.limit.batch_size == 2


@pytest.mark.parametrize(
    "out_of_memory",
    [
        crashed("MemoryError: Unable to allocate 1.15 GiB for an array with shape (8, 3, 224)"),
        lambda _: -9,  # the kernel's OOM killer, as Popen reports it
        lambda _: 137,  # the same, as a shell or a container's init process reports it
    ],
    ids=["numpy", "signal-9", "exit-137"],
)
def test_a_sweep_records_running_out_of_memory_as_its_limit(
    out_of_memory: Step, run_request: RunRequest, tmp_path: Path
) -> None:
    steps = [accuracy_ok, measured, accuracy_ok, out_of_memory]
    job = a_campaign(run_request, tmp_path, *steps, text=TINY_OFFLINE)
    sweep = run_batch_sweep(job, 1, batches=[1, 2, 4])
    data = read_sweep(sweep / "sweep.json")
    assert data.stopped == "out_of_memory" and data.complete
    assert data.limit is not None and data.limit.batch_size == 2
    assert [p.batch_size for p in data.points] == [1]
    assert not (sweep / "INCOMPLETE").exists()


# --- Server: the peak search and its confirming runs ------------------------------------------


# A real Server confirmation on a loaded machine: mobilenet_v2 at the 9.54 QPS its search
# found, 500 queries, 60 over the 300 ms bound (LoadGen: "would need at least 7553 more").
SERVER_CONFIRM = Path(__file__).resolve().parents[1] / "fixtures/loadgen/server-confirm-invalid"


def _result_valid(valid: bool, overs: int | None = 0) -> Step:
    """A real Server result (checked-in fixture) at the job's rate, VALID or not.

    ``overs`` of its 500 queries over the bound; None: LoadGen logged no count.
    """

    def step(run_dir: Path) -> int:
        (run_dir / "user.conf").write_text("")
        data = json.loads((SERVER_CONFIRM / "result.json").read_text())
        data["server"]["target_qps"] = read_job(
            run_dir / "job.json"
        ).request.scenario.server.target_qps
        data["server"]["overlatency_queries"] = overs
        data.update(valid=valid, invalid_reasons=[] if valid else ["Reduce target QPS"])
        (run_dir / "result.json").write_text(json.dumps(data))
        # The run's other files, each naming its rate: they must move with its result.
        rate = data["server"]["target_qps"]
        for name in ("query_latencies.npz", "cpu_telemetry.csv", "telemetry.csv"):
            (run_dir / name).write_text(f"rate {rate}\n")
        mark_complete(run_dir)
        return 0 if valid else 1

    return step


def peak_found(qps: float) -> Step:
    def step(run_dir: Path) -> int:
        (run_dir / "user.conf").write_text("")
        (run_dir / "peak.json").write_text(
            json.dumps({"found_qps": qps, "start_qps": 1.0, "steps": ["a", "b"]})
        )
        mark_complete(run_dir)
        return 0

    return step


@pytest.fixture
def server_request(tmp_path: Path) -> RunRequest:
    text = TINY_SS.replace("scenario: SingleStream", "scenario: Server") + "server: {}\n"
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", text))
    return RunRequest(
        scenario=scenario, scenario_path=tmp_path / "s.yaml", profile="quick", hw="cpu"
    )


def test_a_found_rate_is_confirmed_stepping_down_until_valid(
    server_request: RunRequest, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    launch = ScriptedLauncher(
        accuracy_ok,
        peak_found(100.0),  # three runs ("a", "b" and the base): five confirmations left
        _result_valid(False, overs=5),  # 1 % of 500 over: the tail near the bound
        _result_valid(False, overs=60),  # 12 %: the queue ran away
        _result_valid(True),
        _result_valid(False),  # the bisection up between 59.85 and 85.5 QPS misses
        _result_valid(True),  # and the next one holds: the highest VALID, 8 runs in all
    )
    run_one(server_request, run_dir, launch=launch)
    tests = [job.test for job in launch.jobs]
    assert tests == ["accuracy", "find_peak", *["performance"] * 5]
    assert launch.jobs[1].run_dir == (run_dir / "peak-search").resolve()
    rates = [job.request.scenario.server.target_qps for job in launch.jobs[2:]]
    # The first 5 % below the rate found, then down by how far each missed: 10 % for 1 %
    # over, 30 % for 12 % over; then up, halving the ratio to the lowest INVALID rate.
    assert rates == [95.0, 85.5, 59.85, 71.534, 65.432]
    # A quick confirmation gets the queries early stopping needs to allow 0.4 % over the
    # bound (judged near p99.6, not the p99.8 of 500 queries); the search keeps its own.
    assert [job.request.scenario.quick.min_query_count for job in launch.jobs[1:3]] == [100, 1453]
    assert [
        json.loads((run_dir / f"confirm-{n}" / "result.json").read_text())["valid"]
        for n in (1, 2, 3, 4)
    ] == [False, False, True, False]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["valid"] is True and result["server"]["target_qps"] == 65.432


def test_the_highest_valid_confirmation_is_moved_back_when_the_last_misses(
    server_request: RunRequest, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    search = PeakSearch(found_qps=100.0, start_qps=70.0, steps=[], runs=5, failed_qps=130.0)

    def searched(directory: Path) -> int:
        (directory / "user.conf").write_text("")
        write_peak(directory, search)
        mark_complete(directory)
        return 0

    launch = ScriptedLauncher(
        accuracy_ok, searched, _result_valid(True), _result_valid(False), _result_valid(False)
    )
    run_one(server_request, run_dir, launch=launch)
    rates = [job.request.scenario.server.target_qps for job in launch.jobs[2:]]
    assert rates == [95.0, 111.131, 102.749]  # 5 + 3 runs: the budget ends the bisection
    result = json.loads((run_dir / "result.json").read_text())
    assert result["valid"] is True and result["server"]["target_qps"] == 95.0
    # Its stamps and telemetry came back with it, not the last run's.
    for name in ("query_latencies.npz", "cpu_telemetry.csv", "telemetry.csv"):
        assert (run_dir / name).read_text() == "rate 95.0\n", name
    # The two INVALID ones are kept aside; the VALID one's directory was moved back whole.
    assert sorted(p.name for p in run_dir.glob("confirm-*")) == ["confirm-2", "confirm-3"]
    for name in ("confirm-2", "confirm-3"):
        assert json.loads((run_dir / name / "result.json").read_text())["valid"] is False


def test_confirmations_stop_after_five_runs(server_request: RunRequest, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    invalid = [_result_valid(False) for _ in range(5)]
    launch = ScriptedLauncher(accuracy_ok, peak_found(10.0), *invalid)
    run_one(server_request, run_dir, launch=launch)  # the last INVALID one is the result
    assert len(launch.jobs) == 7
    assert sorted(p.name for p in run_dir.glob("confirm-*")) == [
        "confirm-1",
        "confirm-2",
        "confirm-3",
        "confirm-4",
    ]
    assert json.loads((run_dir / "result.json").read_text())["valid"] is False


def test_a_search_that_left_no_rate_fails_the_run(
    server_request: RunRequest, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()

    def no_rate(directory: Path) -> int:
        (directory / "user.conf").write_text("")
        mark_complete(directory)
        return 0

    with pytest.raises(WorkerError, match="peak search left no rate"):
        run_one(server_request, run_dir, launch=ScriptedLauncher(accuracy_ok, no_rate))


def test_a_search_whose_start_missed_the_bound_runs_again_lower(
    server_request: RunRequest, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    launch = ScriptedLauncher(accuracy_ok, peak_found(0.0), peak_found(40.0), _result_valid(True))
    run_one(server_request, run_dir, launch=launch)
    tests = [job.test for job in launch.jobs]
    assert tests == ["accuracy", "find_peak", "find_peak", "performance"]
    # peak_found's start is 1.0 QPS: the second search starts at a quarter of it, and keeps
    # the scenario's own query count (only confirmations get early stopping's).
    assert launch.jobs[2].request.scenario.server.target_qps == 0.25
    assert launch.jobs[2].request.scenario.quick.min_query_count == 100
    assert (run_dir / "peak-search-1" / "peak.json").is_file()
    assert launch.jobs[3].request.scenario.server.target_qps == 38.0  # 5 % under 40


def test_searches_that_never_find_a_rate_fail_the_run_after_three(
    server_request: RunRequest, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    launch = ScriptedLauncher(accuracy_ok, peak_found(0.0), peak_found(0.0), peak_found(0.0))
    with pytest.raises(WorkerError, match="found no valid rate, even from 1 QPS"):
        run_one(server_request, run_dir, launch=launch)
    assert len(launch.jobs) == 4


def test_confirmations_keep_the_searchs_hold(server_request: RunRequest, tmp_path: Path) -> None:
    # The hold is derived from each worker's own warm-up; near the 1.1x batching-gain line
    # (ResNet-50 on 2 cores: batch 2 costs 1.9-2.1x batch 1) it flips between 0 and tens of
    # ms from run to run, so a confirmation would test another SUT than the search measured.
    run_dir = tmp_path / "run"
    run_dir.mkdir()

    def search(directory: Path) -> int:
        (directory / "user.conf").write_text("")
        write_peak(directory, PeakSearch(found_qps=20.0, start_qps=5.0, steps=[], max_wait_ms=7.5))
        mark_complete(directory)
        return 0

    launch = ScriptedLauncher(accuracy_ok, search, _result_valid(True))
    run_one(server_request, run_dir, launch=launch)
    assert launch.jobs[2].request.scenario.server.max_wait_ms == 7.5
    assert launch.jobs[1].request.scenario.server.max_wait_ms is None  # the search derives it
