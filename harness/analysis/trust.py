"""One result's trust, built in one place (pure): its tier on a leaderboard and its badges.

A group (run, trials, sweep) or a published record, with the facts its files add
(harness.records.trust.TrustFacts), becomes one `Trust`. Tiers, best first:
submission-valid; quick profile (or otherwise not submission-valid, LoadGen VALID);
failed a check (LoadGen INVALID, a compliance test FAILED, IMPLAUSIBLE); incomplete (fewer
results than requested, or an INCOMPLETE marker: interrupted or failed). A leaderboard ranks
by tier first, so an interrupted group never ranks above a complete one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from harness.analysis.spread import spread_flags
from harness.analysis.values import headline
from harness.records.group import Group
from harness.records.measures import Plausibility
from harness.records.published import PublishedResult
from harness.records.result import RunResult
from harness.records.trust import (
    Badge,
    CheckVerdict,
    ComplianceCheck,
    Level,
    PhysicsState,
    ReproductionCheck,
    Tier,
    Trust,
    TrustFacts,
)

NO_FACTS = TrustFacts()
CHECK_LEVELS: Mapping[CheckVerdict, Level] = {
    "PASS": "good",
    "FAIL": "bad",
    "not run": "warn",
    "unknown": "info",
}


def group_trust(group: Group, facts: TrustFacts = NO_FACTS) -> Trust:
    """The trust of a run, trials group or sweep (its results that stand for it)."""
    results = group.results
    runs, requested = len(results), max(group.runs.requested, len(results), 1)
    profiles = sorted({r.outcome.profile for r in results})
    profile = profiles[0] if len(profiles) == 1 else "mixed" if profiles else "none"
    valid = sum(r.outcome.valid for r in results)
    recorded = bool(results) and all(r.outcome.submission_valid for r in results)
    plausibility, implausible = _plausibility(facts.plausibility, runs)
    # never submission-valid when IMPLAUSIBLE or a compliance test failed (MLPerf's rule)
    submission_valid = recorded and implausible is None and not _failed_compliance(facts.compliance)
    incomplete = _incomplete(facts.incomplete, runs, requested, group.kind)
    spread = _spread(group)
    trust = Trust(
        profile=profile,
        submission_valid=submission_valid,
        loadgen=_loadgen(valid, runs),
        runs=runs,
        requested=requested,
        incomplete=incomplete,
        plausibility=plausibility,
        implausible=implausible,
        compliance=facts.compliance,
        bundle=facts.bundle,
        reproduction=facts.reproduction,
        spread=spread,
        tier="incomplete",
        badges=(),
    )
    failed = valid < runs or implausible is not None or _failed_compliance(facts.compliance)
    tier = _tier(incomplete, failed or _invalid_submission(results), submission_valid)
    return _finish(trust, tier)


def published_trust(record: PublishedResult, facts: TrustFacts = NO_FACTS) -> Trust:
    """The trust of a published MLPerf result: a submission, judged as its round logged it."""
    plausibility, implausible = _plausibility(facts.plausibility, 1)
    failed = record.valid is False or implausible is not None
    failed = failed or _failed_compliance(facts.compliance)
    trust = Trust(
        profile=f"MLPerf submission ({record.division})",
        submission_valid=False if failed else record.valid,
        loadgen=record.verdict,
        runs=1,
        requested=1,
        incomplete=facts.incomplete,
        plausibility=plausibility,
        implausible=implausible,
        compliance=facts.compliance,
        bundle=facts.bundle,
        reproduction=facts.reproduction,
        spread=None,
        tier="incomplete",
        badges=(),
    )
    return _finish(trust, _tier(facts.incomplete, failed, record.valid is True))


def with_reproduction(trust: Trust, check: ReproductionCheck) -> Trust:
    """The trust with a reproduction's verdict about the result (found elsewhere in a tree)."""
    return _finish(replace(trust, reproduction=check), trust.tier)


def _finish(trust: Trust, tier: Tier) -> Trust:
    with_tier = replace(trust, tier=tier)
    return replace(with_tier, badges=badges(with_tier))


def _tier(incomplete: str | None, failed: bool, submission_valid: bool) -> Tier:
    if incomplete is not None:
        return "incomplete"
    if failed:
        return "failed a check"
    return "submission-valid" if submission_valid else "quick profile"


def _loadgen(valid: int, runs: int) -> str:
    if runs == 0:
        return "no run"
    if runs == 1:
        return "VALID" if valid else "INVALID"
    return "VALID" if valid == runs else f"{valid} of {runs} VALID"


def _invalid_submission(results: Sequence[RunResult]) -> bool:
    """A submission-profile run LoadGen called VALID that is still not submission-valid."""
    return any(
        r.outcome.profile == "submission" and r.outcome.valid and not r.outcome.submission_valid
        for r in results
    )


def _failed_compliance(checks: Sequence[ComplianceCheck]) -> bool:
    return any(c.verdict == "FAIL" for c in checks)


def _incomplete(marker: str | None, runs: int, requested: int, kind: str) -> str | None:
    """Why the group holds fewer results than it asked for, or None when it is complete."""
    short = runs < requested and kind != "sweep"  # a sweep's points each count their trials
    if marker is None and not short:
        return None
    counted = f"{runs} of {requested} {'trials' if requested > 1 else 'runs'}"
    why = "interrupted" if marker and "interrupted" in marker else "stopped early"
    if marker is None:
        return f"{counted}; {why}"
    return f"{counted}; {why}: {marker}"


def _plausibility(
    found: Sequence[Plausibility | None], runs: int
) -> tuple[PhysicsState, str | None]:
    """IMPLAUSIBLE where any run is; plausible only where every run was checked."""
    bad = [p.reason or "IMPLAUSIBLE" for p in found if p is not None and p.verdict == "IMPLAUSIBLE"]
    if bad:
        return "IMPLAUSIBLE", "; ".join(dict.fromkeys(bad))
    checked = [p for p in found if p is not None and p.verdict == "plausible"]
    if runs and len(checked) == runs:
        return "plausible", None
    return "unknown", None


def _spread(group: Group) -> str | None:
    """The headline metric's spread warning (too large to trust), when it has one."""
    if not group.results:
        return None
    key = headline(group.results[0].scenario, group.results).key
    return spread_flags(group).get(key)


def plausibility_of(result: RunResult) -> Plausibility | None:
    """The run's physics check (result.json's `plausibility`; judged on read when older)."""
    return result.plausibility


def badges(t: Trust) -> tuple[Badge, ...]:
    """The statuses every page shows for a result, in this order; red where it fails."""
    found = [_profile_badge(t), _loadgen_badge(t)]
    if t.incomplete is not None:
        found.append(Badge(key="incomplete", text="INCOMPLETE", level="bad", detail=t.incomplete))
    found.append(_plausibility_badge(t))
    found += [_compliance_badge(c, t.profile) for c in t.compliance]
    found.append(_bundle_badge(t))
    found.append(_reproduction_badge(t))
    if t.spread is not None:
        found.append(Badge(key="spread", text="⚠ spread", level="warn", detail=t.spread))
    return tuple(found)


def _profile_badge(t: Trust) -> Badge:
    if t.profile.startswith("MLPerf"):
        level: Level = (
            "good" if t.submission_valid else "bad" if t.submission_valid is False else "warn"
        )
        return Badge(key="profile", text=t.profile, level=level, detail="a published result")
    if t.submission_valid:
        return Badge(key="profile", text="submission-valid", level="good", detail=t.profile)
    if t.profile == "submission":
        why = [
            *(["IMPLAUSIBLE"] if t.implausible else []),
            *(f"{c.test} FAIL" for c in t.compliance if c.verdict == "FAIL"),
        ]
        reasons = ", ".join(why) or "see its reasons"
        detail = f"submission profile, but not valid for a submission ({reasons})"
        return Badge(
            key="profile", text="submission profile: NOT valid", level="bad", detail=detail
        )
    detail = "shortened LoadGen run: NOT valid for an MLPerf submission"
    return Badge(key="profile", text=f"{t.profile} profile", level="warn", detail=detail)


def _loadgen_badge(t: Trust) -> Badge:
    level: Level = (
        "good" if t.loadgen == "VALID" else "warn" if t.loadgen == "not logged" else "bad"
    )
    return Badge(
        key="loadgen", text=f"LoadGen {t.loadgen}", level=level, detail="LoadGen's verdict"
    )


def _plausibility_badge(t: Trust) -> Badge:
    if t.plausibility == "IMPLAUSIBLE":
        return Badge(key="physics", text="IMPLAUSIBLE", level="bad", detail=t.implausible or "")
    if t.plausibility == "plausible":
        return Badge(key="physics", text="physics plausible", level="good")
    detail = "no physics check recorded with this result"
    return Badge(key="physics", text="physics unknown", level="info", detail=detail)


def _compliance_badge(c: ComplianceCheck, profile: str) -> Badge:
    """A test's verdict; "not run" warns only where a submission needs it run."""
    level = CHECK_LEVELS[c.verdict]
    if c.verdict == "not run" and profile == "quick":
        level = "info"
    return Badge(key=c.test, text=f"{c.test} {c.verdict}", level=level, detail=c.detail)


def _bundle_badge(t: Trust) -> Badge:
    b = t.bundle
    if b is None:
        return Badge(key="bundle", text="not verified", level="info", detail="not from a bundle")
    signer = f"signer {b.signer[:16]}"
    if not b.verified:
        return Badge(key="bundle", text="bundle not verified", level="warn", detail=f"{b.name}")
    if b.trusted:
        detail = f"{b.name}: signature and files verified, {signer}, a trusted key"
        return Badge(key="bundle", text="verified, trusted signer", level="good", detail=detail)
    detail = f"{b.name}: verified, {signer} NOT checked against a key (pass --trust KEY.pub)"
    return Badge(key="bundle", text="verified, signer NOT checked", level="warn", detail=detail)


def _reproduction_badge(t: Trust) -> Badge:
    r = t.reproduction
    if r is None:
        return Badge(key="reproduction", text="not reproduced", level="info", detail="no verdict")
    level: Level = "good" if r.verdict == "REPRODUCED" else "bad"
    return Badge(key="reproduction", text=r.verdict, level=level, detail=r.detail)
