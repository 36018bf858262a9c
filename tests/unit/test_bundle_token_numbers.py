"""Issue #27: result-numbers lets a generative run be INVALID by the token checks alone.

LoadGen calls a run VALID that the token checks (harness.analysis.tokens) find INVALID; its
result.json then says `valid: false` beside a VALID detail log. That is no edit (the tokens
check redoes the token checks); `valid: false` with no token problem stays a discrepancy.
"""

from __future__ import annotations

from harness.bundle.numbers import discrepancies
from harness.records.loadgen_log import parse_detail_log
from tests.conftest import REPO

LOG = REPO / "tests" / "fixtures" / "loadgen" / "offline-valid" / "mlperf_log_detail.txt"


def test_a_token_check_invalid_run_is_no_discrepancy() -> None:
    log = parse_detail_log(LOG)
    assert log.get("result_validity") == "VALID"
    flagged = {"valid": False, "generation": {"token_problems": ["a query produced 1 token(s)"]}}
    assert discrepancies(flagged, log) == []


def test_invalid_without_a_token_problem_is_a_discrepancy() -> None:
    log = parse_detail_log(LOG)
    for result in ({"valid": False}, {"valid": False, "generation": {"token_problems": []}}):
        (found,) = discrepancies(result, log)
        assert (found.key, found.recorded, found.logged) == ("valid", False, True)
