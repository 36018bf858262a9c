"""`harness fleet slurm|k8s`'s options as typed requests (harness.fleet.launch plans them).

The suite's scenarios are resolved as `harness bench` resolves them (harness.cli.measure's
rules: target, suite file, meter opt-in, precision, provider chain), when the plan asks.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import ConfigError
from harness.records.runlabel import check_label

if TYPE_CHECKING:
    from harness.config import Scenario
    from harness.fleet.launch import K8sRequest, ResolvedSuite, SlurmRequest, SuiteRequest


def slurm_request(args: argparse.Namespace) -> SlurmRequest:
    """`harness fleet slurm`'s options, as parsed."""
    from harness.fleet.launch import SlurmRequest

    return SlurmRequest(
        suite=_suite_request(args),
        partition=args.partition,
        nodes=args.nodes,
        nodelist=args.nodelist,
        image=args.image,
        runner=args.runner,
        time_min=args.time,
        account=args.account,
        gpus_per_node=args.gpus_per_node,
        sbatch=tuple(args.sbatch),
        harness=args.harness,
    )


def k8s_request(args: argparse.Namespace) -> K8sRequest:
    """`harness fleet k8s`'s options, as parsed."""
    from harness.fleet.k8s.spec import ResultsVolume
    from harness.fleet.launch import K8sRequest

    return K8sRequest(
        suite=_suite_request(args),
        image=args.image,
        namespace=args.namespace,
        nodes=args.nodes,
        volume=ResultsVolume(
            claim=args.claim, host_path=args.host_path, mount_path=args.mount_path
        ),
        parallelism=args.parallelism,
        cpu=args.cpu,
        memory=args.memory,
        gpus=args.gpus,
        backoff_limit=args.backoff_limit,
        node_selector=tuple(args.node_selector),
        kubeconfig=args.kubeconfig,
        apply=args.apply,
    )


def _suite_request(args: argparse.Namespace) -> SuiteRequest:
    from harness.fleet.launch import SuiteRequest

    precisions = tuple(p.strip() for p in (args.precision or "").split(",") if p.strip())
    options = _SuiteOptions(
        suite=args.suite,
        hw=args.hw,
        profile=args.profile,
        precisions=precisions or (None,),
        providers=args.providers,
        trials=args.trials,
        out=args.out,
    )
    return SuiteRequest(
        resolve=options.resolve,
        hw=args.hw,
        shard_by=args.shard,
        out=args.out,
        dry_run=args.dry_run,
        label=check_label(args.label),
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class _SuiteOptions:
    """The options that choose and resolve a fleet's suite."""

    suite: str
    hw: str
    profile: str | None
    precisions: tuple[str | None, ...]
    providers: str | None
    trials: int | None
    out: Path

    def resolve(self) -> ResolvedSuite:
        """The suite's scenarios resolved as bench resolves them: name, profile, entries."""
        from harness.cli.measure import _find_suite
        from harness.config import as_profile
        from harness.execution.campaign import Campaign, trials_count
        from harness.fleet.grammar import check_suite_name
        from harness.fleet.launch import ResolvedSuite
        from harness.fleet.plan import Entry
        from harness.records.request import RunRequest

        if self.trials is not None and self.trials < 1:
            raise ConfigError(f"--trials: must be >= 1, got {self.trials}")
        suite, base = _find_suite(self.suite)
        check_suite_name(self.suite, suite.name)
        profile = self.profile or suite.profile
        entries = []
        for name in suite.scenarios:
            for precision in self.precisions:
                scenario = self._scenario(base / name, precision)
                request = RunRequest(
                    scenario=scenario,
                    scenario_path=base / name,
                    profile=as_profile(profile),
                    hw=self.hw,
                )
                trials = trials_count(Campaign(request=request, out_root=self.out), self.trials)
                entries.append(
                    Entry(scenario=scenario, scenario_path=str(base / name), trials=trials)
                )
        return ResolvedSuite(name=suite.name, profile=profile, entries=tuple(entries))

    def _scenario(self, path: Path, precision: str | None) -> Scenario:
        """One scenario file with the command line's precision and providers, checked."""
        from harness.cli.measure import _check_chain, _with_precision
        from harness.config import is_suite_file, load_scenario
        from harness.hardware import get_target as hardware_target
        from harness.telemetry.external import check_meter_opt_in

        hardware_target(self.hw)  # an unknown --hw is one line here, not a failed worker
        if is_suite_file(path):
            raise ConfigError(f"{path}: is a suite, not a scenario; use `harness bench {path}`")
        scenario = load_scenario(path)
        check_meter_opt_in(scenario.telemetry, os.environ)  # before any model work
        if precision is not None:
            scenario = _with_precision(scenario, precision, path)
        if self.providers:
            names = tuple(p.strip() for p in self.providers.split(",") if p.strip())
            _check_chain(self.hw, names, "--providers")
            runtime = dataclasses.replace(scenario.runtime, providers=names)
            return dataclasses.replace(scenario, runtime=runtime)
        if scenario.runtime.providers:  # here, not first in a worker that then fails
            _check_chain(self.hw, scenario.runtime.providers, str(path))
        return scenario
