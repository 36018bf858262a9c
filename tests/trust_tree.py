"""A mixed results tree built from real tiny-model runs, for the trust tests (site, show, browser).

What it holds, and how each status is made:
- a quick-profile trials group (2 trials), run as is;
- a "submission" run: a real quick run whose result.json is then marked `profile: submission,
  submission_valid: true` (a real submission run takes 600 s; the records are what the trust
  record reads);
- an interrupted trials group: `harness run --trials 2` stopped with SIGINT to its process
  group (as Ctrl-C sends it) while trial 2 runs: 1 of 2 trials and an INCOMPLETE marker;
- an IMPLAUSIBLE run: a real quick run, judged with a constructed IMPLAUSIBLE plausibility
  record (result.json has no physics check on this branch), through build_site's `judge`;
- the shipped SingleStream bundle, signed by the founders' key, whose TEST01 and TEST04 failed;
- a bundle of a real Offline run, signed with a key made here, and its reproduction group
  (`harness reproduce BUNDLE --trust KEY.pub`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.analysis.trust import group_trust
from harness.cli import main
from harness.inspect.opener import Opened, Side
from harness.inspect.trust import trust_of
from harness.records.group import Group
from harness.records.measures import Plausibility
from harness.records.trust import Trust, TrustFacts
from tests.conftest import REPO, TINY_SS, harness_dir, write_scenario

PUBLISHED = REPO / "results" / "published"
SHIPPED_SS = PUBLISHED / "2026-12-01-resnet50-open-2core-epyc-kvm-SingleStream.bundle.tar"
FOUNDERS = PUBLISHED / "beyond-tops-founders.pub"
OFFLINE = """
name: tiny-trust-offline
scenario: Offline
model: {zoo: tiny}
batch_size: 8
trials: 1
data: {total_sample_count: 64}
warmup: {min_queries: 5, min_duration_ms: 200}
quick: {min_duration_ms: 600, min_query_count: 200, performance_sample_count: 32,
        accuracy_sample_count: 16}
"""
IMPLAUSIBLE = Plausibility(
    verdict="IMPLAUSIBLE",
    figure="10.5 TFLOP/s achieved against a 0.333 TFLOP/s peak",
    ratio=31.5,
    limit=4.0,
    reason="10.5 TFLOP/s achieved: 3153 % of the 0.333 TFLOP/s peak",
)


@dataclass(frozen=True, kw_only=True)
class Tree:
    """The tree's root and where each case lies in it."""

    root: Path
    quick: Path
    submission: Path
    interrupted: Path
    cheat: Path
    shipped: Path
    bundle: Path
    reproduction: Path
    key_pub: Path

    @property
    def trusted(self) -> list[Path]:
        """The keys a reader passes with --trust."""
        return [FOUNDERS, self.key_pub]

    def judge(self, side: Side, opened: Opened | None) -> Trust:
        """trust_of, with the cheat's runs judged IMPLAUSIBLE (a constructed record)."""
        trust = trust_of(side, opened)
        if isinstance(side, Group) and side.label == self.cheat.name:
            facts = TrustFacts(
                compliance=trust.compliance,
                plausibility=(IMPLAUSIBLE,) * len(side.results),
            )
            return group_trust(side, facts)
        return trust


def build_tree(base: Path) -> Tree:
    """Run everything the tree holds under base/results (a few minutes of tiny runs at most)."""
    root = base / "results"
    ss = write_scenario(base / "ss.yaml", TINY_SS)
    quick = harness_dir(["run", str(ss), "--trials", "2", "--out", str(root / "quick")])
    submission = harness_dir(["run", str(ss), "--out", str(root / "submission")])
    _mark_submission(submission)
    cheat = harness_dir(["run", str(ss), "--out", str(root / "cheat")])
    interrupted = _interrupted(ss, root / "interrupted")
    shipped = root / "shipped" / SHIPPED_SS.name
    shipped.parent.mkdir(parents=True)
    shutil.copy(SHIPPED_SS, shipped)
    offline = write_scenario(base / "offline.yaml", OFFLINE)
    recorded = harness_dir(["run", str(offline), "--out", str(base / "recorded")])
    key, bundle = base / "key", root / "bundles" / "offline.tar"
    bundle.parent.mkdir(parents=True)
    assert main(["keygen", "--out", str(key)]) == 0
    assert main(["bundle", str(recorded), "--key", str(key), "--out", str(bundle)]) == 0
    args = ["reproduce", str(bundle), "--trust", f"{key}.pub", "--trials", "1"]
    code = main([*args, "--tolerance", "offline=50%", "--out", str(root / "reproductions")])
    assert code in (0, 30)  # reproduced, or not: what the site shows is what the file says
    (reproduction,) = (root / "reproductions").iterdir()
    return Tree(
        root=root,
        quick=quick,
        submission=submission,
        interrupted=interrupted,
        cheat=cheat,
        shipped=shipped,
        bundle=bundle,
        reproduction=reproduction,
        key_pub=Path(f"{key}.pub"),
    )


def _mark_submission(run_dir: Path) -> None:
    """Mark a real quick run's result.json as a submission run's (see the module's note)."""
    path = run_dir / "result.json"
    data = json.loads(path.read_text())
    assert data["valid"] is True, data["invalid_reasons"]
    data["profile"], data["submission_valid"] = "submission", True
    path.write_text(json.dumps(data, indent=2) + "\n")


def _interrupted(scenario: Path, out: Path) -> Path:
    """`harness run --trials 2`, stopped by SIGINT to its process group while trial 2 runs."""
    argv = [sys.executable, "-m", "harness.cli", "run", str(scenario), "--trials", "2"]
    proc = subprocess.Popen(
        [*argv, "--out", str(out)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.stat().st_size > 0 for p in out.glob("*/trial-2/mlperf_log_detail.txt")):
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    (group,) = out.iterdir()
    assert (group / "INCOMPLETE").is_file() and (group / "trials.json").is_file()
    return group
