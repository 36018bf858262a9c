"""How far a result can be trusted: the facts beside its numbers, and the one record built of them.

Every page that shows a result (the site's leaderboards and entry pages, `show`, `report`,
`compare`) shows its `Trust`, built in one place (harness.analysis.trust) from `TrustFacts`,
which harness.inspect.trust reads from the files beside the results (compliance verdicts,
reproduction.json, INCOMPLETE markers, the bundle's verification).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.records.measures import Plausibility

# A check's verdict. "unknown": nothing recorded says (an older result, a published record
# without it); "not run": the record says it was not run.
CheckVerdict = Literal["PASS", "FAIL", "not run", "unknown"]
# A result's physics check over its runs: IMPLAUSIBLE where any run is, plausible where every
# run was judged so, unknown otherwise (not judged, or written before the check existed).
PhysicsState = Literal["plausible", "IMPLAUSIBLE", "unknown"]
# The tiers a leaderboard ranks in, best first; a result never ranks above a better tier.
Tier = Literal["submission-valid", "quick profile", "failed a check", "incomplete"]
TIERS: tuple[Tier, ...] = ("submission-valid", "quick profile", "failed a check", "incomplete")
# How a badge reads: bad (red), warn (amber), good (green), info (plain).
Level = Literal["bad", "warn", "good", "info"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ComplianceCheck:
    """One compliance test (TEST01, TEST04) of a result: its verdict and where it says so."""

    test: str
    verdict: CheckVerdict
    detail: str = ""  # e.g. which run failed, or the verdict file's summary


@dataclass(frozen=True, slots=True, kw_only=True)
class BundleCheck:
    """A bundle a result came from: verified (signature and files), its signer, trusted or not.

    ``verified`` False: the result was read without opening its bundle (a reproduction's
    recorded copy, say), so nothing was checked here.
    """

    name: str
    verified: bool
    signer: str  # the signer key's fingerprint
    trusted: bool  # among the keys given with --trust


@dataclass(frozen=True, slots=True, kw_only=True)
class ReproductionCheck:
    """A `harness reproduce` verdict about a result (REPRODUCED, NOT REPRODUCED, ...)."""

    verdict: str
    detail: str  # the ratio and the tolerance, or the first reason


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustFacts:
    """What the files beside a result say of it; every field may be absent (unknown).

    ``incomplete``: the cause an INCOMPLETE marker of the group gives. ``plausibility``: one
    per result the group stands for, None where the result records none.
    """

    bundle: BundleCheck | None = None
    compliance: tuple[ComplianceCheck, ...] = ()
    reproduction: ReproductionCheck | None = None
    incomplete: str | None = None
    plausibility: tuple[Plausibility | None, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Badge:
    """One status as pages show it: a key for scripts and tests, its text, its level, why."""

    key: str  # e.g. "profile", "TEST01", "incomplete"
    text: str
    level: Level
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Trust:
    """How far a result (a run, a group, a published record) can be trusted, in one record.

    ``profile``: quick, submission, "mixed" or "MLPerf submission" (a published result);
    ``submission_valid``: every run valid for a submission (None: not known); ``loadgen``:
    LoadGen's verdict over the runs ("VALID", "1 of 2 VALID"); ``incomplete``: why the group
    holds fewer results than it asked for (interrupted, a run failed); ``implausible``: the
    physics check's reason; ``spread``: the headline's spread warning. ``tier`` is what a
    leaderboard ranks by first; ``badges`` what every page shows, in this order.
    """

    profile: str
    submission_valid: bool | None
    loadgen: str
    runs: int
    requested: int
    incomplete: str | None
    plausibility: PhysicsState
    implausible: str | None
    compliance: tuple[ComplianceCheck, ...]
    bundle: BundleCheck | None
    reproduction: ReproductionCheck | None
    spread: str | None
    tier: Tier
    badges: tuple[Badge, ...]

    @property
    def rank(self) -> int:
        """The tier's place, 0 best: what a leaderboard sorts by before the headline."""
        return TIERS.index(self.tier)
