"""One rate of a Server peak search: a short LoadGen run in RUN/peak-search/step-N/, judged.

Both searches (CNN Server's harness.execution.peaksearch and the generative one's
harness.execution.genpeaksearch) ask harness.analysis.capsearch's rates of a SearchSteps:
each is the scenario at that rate, its confs written (the request's pins with them) into the
next step-N/, run by the search's own `launch`, and judged as LoadGen's FindPeakPerformance
judges a step: by its detail log's result_perf_constraints_met; the CNN search, with
`as_confirmed`, also by the share of its queries over the bound (capsearch.step_passes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import IO

from harness.analysis import capsearch
from harness.loadgen.plan import write_test_confs
from harness.loadgen.timed import TestPlan
from harness.records.job import Job
from harness.records.layout import DETAIL_LOG, STEP_PREFIX
from harness.records.loadgen_log import logged_int, parse_detail_log
from harness.records.request import Expectation


class SearchSteps:
    """capsearch's `passes`: runs each rate asked for as the next step; keeps each step's line.

    ``latency_ns`` is what LoadGen is told to expect of a query; ``judged`` names what a step
    is held to ("the bound", "the limits"), ``name`` the search in its progress lines;
    ``as_confirmed``: judge a step's tail as a confirmation would (capsearch.step_passes).
    """

    def __init__(
        self,
        job: Job,
        launch: Callable[[Job, TestPlan], object],
        *,
        latency_ns: float,
        total_samples: int,
        judged: str,
        name: str,
        progress: IO[str] | None,
        as_confirmed: bool = False,
    ) -> None:
        self._job, self._launch = job, launch
        self._as_confirmed = as_confirmed
        self._latency_ns, self._total_samples = latency_ns, total_samples
        self._judged, self._name, self._progress = judged, name, progress
        self.steps: list[str] = []

    def __call__(self, rate_qps: float) -> bool:
        """Run the next step at `rate_qps`; whether it met what it is judged by."""
        job = self._job
        directory = job.run_dir / f"{STEP_PREFIX}{len(self.steps) + 1}"
        directory.mkdir()
        scenario = job.request.scenario
        server = dataclasses.replace(scenario.server, target_qps=round(rate_qps, 3))
        at_rate = dataclasses.replace(scenario, server=server)
        plan = write_test_confs(
            directory,
            scenario=at_rate,
            profile=job.request.profile,
            model_key=job.request.loadgen_key,
            pins=job.request.pins,
            expected=Expectation(latency_ns=self._latency_ns, samples_per_second=rate_qps),
            total_samples=self._total_samples,
            mode="performance",
        )
        step = dataclasses.replace(
            job, run_dir=directory, request=dataclasses.replace(job.request, scenario=at_rate)
        )
        self._launch(step, plan)
        log = parse_detail_log(directory / DETAIL_LOG)
        within = log.get("result_perf_constraints_met") is True
        line = f"{rate_qps:.3f} QPS: {'within' if within else 'over'} {self._judged}"
        passed = within
        if self._as_confirmed:
            overs = logged_int(log, "result_overlatency_query_count")
            queries = logged_int(log, "result_query_count")
            passed = capsearch.step_passes(within, overs, queries)
            if within and not passed:
                line += (
                    f" at p99, but {overs} of {queries} queries over it: more than the "
                    f"{capsearch.confirm_over_share():.2%} a confirmation may have"
                )
        self.steps.append(line)
        if self._progress is not None:
            self._progress.write(f"  {self._name}: {self.steps[-1]}\n")
        return passed
