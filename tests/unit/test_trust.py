"""One trust record per result: its tier, its badges, and the facts read from real files."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from pathlib import Path

import pytest

from harness.analysis.trust import group_trust, plausibility_of, published_trust
from harness.inspect.opener import load_side, open_path
from harness.inspect.trust import trust_of
from harness.records.group import Group
from harness.records.measures import Plausibility
from harness.records.trust import (
    BundleCheck,
    ComplianceCheck,
    ReproductionCheck,
    Trust,
    TrustFacts,
)
from harness.report.badges import badges_html, trust_rows
from harness.report.text import render_group
from harness.results.groups import load_group
from harness.site.boards import build_boards
from harness.site.entries import Entry
from tests.conftest import REPO

REPORTS = REPO / "tests" / "fixtures" / "reports"
PUBLISHED = REPO / "results" / "published"
SHIPPED_SS = PUBLISHED / "2026-12-01-resnet50-open-2core-epyc-kvm-SingleStream.bundle.tar"
FOUNDERS = PUBLISHED / "beyond-tops-founders.pub"
IMPLAUSIBLE = Plausibility(
    verdict="IMPLAUSIBLE",
    figure="10.5 TFLOP/s achieved against a 0.333 TFLOP/s peak",
    ratio=31.5,
    limit=4.0,
    reason="10.5 TFLOP/s achieved: 3153 % of the 0.333 peak",
)


def _keys(trust: Trust) -> dict[str, str]:
    return {b.key: b.text for b in trust.badges}


def _levels(trust: Trust) -> dict[str, str]:
    return {b.key: b.level for b in trust.badges}


def _submission(group: Group) -> Group:
    """The group as a submission-profile group: unit-level records marked, not measured."""
    marked = tuple(
        dataclasses.replace(
            r, outcome=dataclasses.replace(r.outcome, profile="submission", submission_valid=True)
        )
        for r in group.results
    )
    runs = dataclasses.replace(group.runs, results=marked)
    return dataclasses.replace(group, runs=runs, label=f"{group.label}-submission")


def test_a_complete_quick_group_is_marked_quick_and_not_submission_valid() -> None:
    trust = group_trust(load_group(REPORTS / "trials-epyc"))
    assert (trust.tier, trust.profile, trust.submission_valid) == ("quick profile", "quick", False)
    assert [b.key for b in trust.badges] == [
        "profile",
        "loadgen",
        "physics",
        "bundle",
        "reproduction",
        "spread",
    ]
    assert _keys(trust)["profile"] == "quick profile" and _levels(trust)["profile"] == "warn"
    assert _keys(trust)["loadgen"] == "LoadGen VALID"
    assert _keys(trust)["physics"] == "physics unknown"  # no physics check recorded
    assert _keys(trust)["bundle"] == "not verified"
    assert "spread too large to trust" in (trust.spread or "")


def test_fewer_trials_than_requested_is_incomplete_never_valid_and_ranks_last() -> None:
    xeon = load_group(REPORTS / "trials-xeon")
    assert (len(xeon.results), xeon.runs.requested) == (2, 3)
    trust = group_trust(xeon)
    assert trust.tier == "incomplete" and trust.rank == 3
    assert trust.incomplete == "2 of 3 trials; stopped early"
    assert _levels(trust)["incomplete"] == "bad"
    marker = "trial-3 interrupted (SIGINT) in the performance test, during LoadGen's run"
    stopped = group_trust(xeon, TrustFacts(incomplete=marker))
    assert stopped.incomplete == f"2 of 3 trials; interrupted: {marker}"


def test_a_submission_valid_group_is_the_first_tier() -> None:
    trust = group_trust(_submission(load_group(REPORTS / "trials-epyc")))
    assert (trust.tier, trust.rank, trust.submission_valid) == ("submission-valid", 0, True)
    assert _keys(trust)["profile"] == "submission-valid" and _levels(trust)["profile"] == "good"


def test_an_implausible_run_fails_a_check_and_says_which_figure() -> None:
    group = _submission(load_group(REPORTS / "trials-epyc"))
    runs = len(group.results)
    bad = group_trust(group, TrustFacts(plausibility=(None,) * (runs - 1) + (IMPLAUSIBLE,)))
    assert (bad.tier, bad.plausibility) == ("failed a check", "IMPLAUSIBLE")
    assert bad.submission_valid is False  # never submission-valid when IMPLAUSIBLE
    badge = next(b for b in bad.badges if b.key == "physics")
    assert (badge.text, badge.level, badge.detail) == ("IMPLAUSIBLE", "bad", IMPLAUSIBLE.reason)
    fine = Plausibility(verdict="plausible", figure=None, ratio=0.5, limit=3.0, reason="")
    assert group_trust(group, TrustFacts(plausibility=(fine,) * runs)).plausibility == "plausible"
    # one run unchecked: not "plausible", only unknown
    some = group_trust(group, TrustFacts(plausibility=(fine,) * (runs - 1) + (None,)))
    assert some.plausibility == "unknown" and some.tier == "submission-valid"


def test_a_failed_compliance_test_fails_a_check() -> None:
    group = _submission(load_group(REPORTS / "trials-epyc"))
    checks = (
        ComplianceCheck(test="TEST01", verdict="PASS"),
        ComplianceCheck(test="TEST04", verdict="FAIL", detail="trial-1: failed"),
    )
    trust = group_trust(group, TrustFacts(compliance=checks))
    assert trust.tier == "failed a check"
    assert (_keys(trust)["TEST01"], _keys(trust)["TEST04"]) == ("TEST01 PASS", "TEST04 FAIL")
    assert _levels(trust)["TEST04"] == "bad"


def test_bundle_and_reproduction_badges_say_who_vouches_and_what_was_found() -> None:
    group = load_group(REPORTS / "trials-epyc")
    bundle = BundleCheck(name="r.tar", verified=True, signer="SHA256:abc", trusted=False)
    found = ReproductionCheck(verdict="NOT REPRODUCED", detail="of r.tar: ratio 1.4")
    trust = group_trust(group, TrustFacts(bundle=bundle, reproduction=found))
    assert _keys(trust)["bundle"] == "verified, signer NOT checked"
    assert _levels(trust)["reproduction"] == "bad" and _keys(trust)["reproduction"] == (
        "NOT REPRODUCED"
    )
    trusted = dataclasses.replace(bundle, trusted=True)
    ok = ReproductionCheck(verdict="REPRODUCED", detail="ratio 1.01")
    good = group_trust(group, TrustFacts(bundle=trusted, reproduction=ok))
    assert _levels(good)["bundle"] == _levels(good)["reproduction"] == "good"


def test_the_shipped_singlestream_bundle_failed_test01_and_test04() -> None:
    with contextlib.ExitStack() as stack:
        opened = open_path(SHIPPED_SS, [FOUNDERS], stack)
        (member,) = opened.members
        trust = trust_of(load_side(member), opened)
        unchecked = open_path(SHIPPED_SS, [], stack)
        anyone = trust_of(load_side(unchecked.members[0]), unchecked)
    assert [(c.test, c.verdict) for c in trust.compliance] == [
        ("TEST01", "FAIL"),
        ("TEST04", "FAIL"),
    ]
    # recorded submission-valid, but a failed compliance test makes it not valid (MLPerf's rule)
    assert trust.tier == "failed a check" and trust.submission_valid is False
    profile = next(b for b in trust.badges if b.key == "profile")
    assert (profile.text, profile.level) == ("submission profile: NOT valid", "bad")
    assert profile.detail.endswith("(TEST01 FAIL, TEST04 FAIL)")
    assert trust.bundle is not None and trust.bundle.trusted
    assert _keys(trust)["bundle"] == "verified, trusted signer"
    assert _keys(anyone)["bundle"] == "verified, signer NOT checked"
    rows = dict(trust_rows(trust))
    assert rows["trust"].startswith("failed a check: submission profile: NOT valid | LoadGen VALID")


def test_a_published_record_is_a_submission_with_unknown_tests_unless_stated(
    tmp_path: Path,
) -> None:
    from harness.published.importer import import_mlperf
    from harness.published.record import load_published
    from tests.unit.test_published_import import FIXTURES, fixed_now

    written = import_mlperf(FIXTURES, tmp_path, now=fixed_now).written
    records = [load_published(path) for path in written]
    valid = next(r for r in records if r.valid is True)
    trust = published_trust(valid)
    assert trust.tier == "submission-valid" and trust.profile.startswith("MLPerf submission")
    assert _keys(trust)["loadgen"] == "LoadGen VALID"
    facts = trust_of(valid)  # the files say nothing of TEST01/TEST04 yet: unknown, not passed
    assert valid.model == "resnet50"
    assert [(c.test, c.verdict) for c in facts.compliance] == [
        ("TEST01", "unknown"),
        ("TEST04", "unknown"),
    ]
    assert facts.tier == "submission-valid"


def test_a_results_physics_check_is_the_one_result_json_holds_or_judges_on_read() -> None:
    result = load_group(REPORTS / "trials-epyc").results[0]  # written before the check
    found = plausibility_of(result)
    assert found is result.plausibility and found is not None
    assert found.verdict == "plausible"  # judged from its own figures when read
    cheat = dataclasses.replace(result, plausibility=IMPLAUSIBLE)
    assert plausibility_of(cheat) == IMPLAUSIBLE


def test_leaderboards_rank_by_tier_before_the_headline() -> None:
    epyc, xeon = load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "trials-xeon")
    submission = _submission(epyc)
    implausible = dataclasses.replace(_submission(epyc), label="cheater")
    groups = (xeon, epyc, implausible, submission)
    bad = TrustFacts(plausibility=(IMPLAUSIBLE,) * len(epyc.results))
    trusts = tuple(group_trust(g, bad if g is implausible else TrustFacts()) for g in groups)
    entry = Entry(
        slug="all",
        kind="trials",
        title="all",
        source=REPORTS,
        groups=groups,
        published=(),
        data=REPORTS,
        notes=(),
        trust=trusts,
    )
    (board,) = [b for b in build_boards([entry]) if b.scenario == "SingleStream"]
    # xeon has the best early-stopping p90 (1.922 ms) but 2 of 3 trials: last
    assert [r.label for r in board.rows] == [
        "trials-epyc-submission",
        "trials-epyc",
        "cheater",
        "trials-xeon",
    ]
    assert [r.trust.tier for r in board.rows] == [
        "submission-valid",
        "quick profile",
        "failed a check",
        "incomplete",
    ]


def test_show_prints_the_tier_and_each_failing_verdict_with_its_reason() -> None:
    xeon = load_group(REPORTS / "trials-xeon")
    text = render_group(xeon, "trials-xeon", trust=group_trust(xeon))
    lines = text.splitlines()
    assert lines[1].startswith("  trust       incomplete: quick profile | LoadGen VALID | ")
    assert "  check       INCOMPLETE (2 of 3 trials; stopped early)" in lines


@pytest.mark.parametrize("hostile", ["<script>alert(1)</script>", '" onmouseover="x'])
def test_a_badge_writes_its_hostile_detail_as_text(hostile: str) -> None:
    group = load_group(REPORTS / "trials-epyc")
    check = ComplianceCheck(test="TEST04", verdict="FAIL", detail=hostile)
    html = badges_html(group_trust(group, TrustFacts(compliance=(check,))).badges)
    assert hostile not in html and "<script" not in html
    assert 'data-trust="TEST04" data-level="bad"' in html


def test_an_unreadable_reproduction_file_is_shown_not_passed_over(tmp_path: Path) -> None:
    group_dir = tmp_path / "trials-epyc"
    shutil.copytree(REPORTS / "trials-epyc", group_dir)
    (group_dir / "reproduction.json").write_text('{"schema_version": 1, "verdict": "REPRODUCED"}')
    trust = trust_of(load_group(group_dir))
    assert trust.reproduction is not None
    assert trust.reproduction.verdict == "unreadable reproduction.json"
    assert _levels(trust)["reproduction"] == "bad"


def test_compliance_verdicts_are_read_from_each_runs_verdict_file(tmp_path: Path) -> None:
    from harness.compliance.summary import group_compliance

    with contextlib.ExitStack() as stack:
        (member,) = open_path(SHIPPED_SS, [FOUNDERS], stack).members
        run = Path(shutil.copytree(member.path, tmp_path / member.path.name))
    verdicts = run / "compliance"

    def found() -> list[tuple[str, str]]:
        return [(c.test, c.verdict) for c in group_compliance(load_group(run))]

    assert found() == [("TEST01", "FAIL"), ("TEST04", "FAIL")]
    test01 = verdicts / "TEST01" / "verdict.json"
    test01.write_text(test01.read_text().replace('"passed": false', '"passed": true', 1))
    assert found() == [("TEST01", "PASS"), ("TEST04", "FAIL")]
    (verdicts / "TEST04" / "verdict.json").unlink()  # a test that never finished did not pass
    (fail,) = [c for c in group_compliance(load_group(run)) if c.test == "TEST04"]
    assert (fail.verdict, "no verdict.json" in fail.detail) == ("FAIL", True)
    shutil.rmtree(verdicts)  # resnet50 needs both: not run, not passed
    assert found() == [("TEST01", "not run"), ("TEST04", "not run")]


def test_a_published_records_compliance_verdicts_become_its_checks(tmp_path: Path) -> None:
    from harness.inspect.trust import published_compliance
    from harness.published.importer import import_mlperf
    from harness.published.record import load_published
    from harness.records.published import PublishedCompliance
    from tests.unit.test_published_import import INTEL_RUN, fixed_now

    (written,) = import_mlperf(INTEL_RUN, tmp_path, now=fixed_now).written
    record = load_published(written)  # resnet50: TEST01 and TEST04 required
    assert {c.test: c.verdict for c in published_compliance(record)} == {
        "TEST01": "unknown",
        "TEST04": "unknown",
    }
    failed = PublishedCompliance(test="TEST01", performance=False, accuracy=True)
    passed = PublishedCompliance(test="TEST04", performance=True, accuracy=None)
    stated = dataclasses.replace(record, compliance=(failed, passed))
    checks = {c.test: c for c in published_compliance(stated)}
    assert checks["TEST01"].verdict == "FAIL" and "performance" in checks["TEST01"].detail
    assert checks["TEST04"].verdict == "PASS"
    from harness.inspect.trust import trust_of

    trust = trust_of(stated)  # what show, compare and the site judge it by
    assert trust.tier == "failed a check" and _keys(trust)["TEST01"] == "TEST01 FAIL"
