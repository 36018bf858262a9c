"""The three verdicts of `harness reproduce` and their exit codes (answers, not errors)."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

from harness.errors import ExitCode

Verdict = Literal["REPRODUCED", "NOT REPRODUCED", "NOT COMPARABLE"]
VERDICTS: tuple[Verdict, ...] = typing.get_args(Verdict)
# Apart from harness.errors' table and clear of its codes (0-9, 20-29, 32-34, 70, 129-143), so
# that a script tells "did not reproduce" from "could not run"; REPRODUCED is success.
VERDICT_CODES: Final[Mapping[Verdict, ExitCode]] = MappingProxyType(
    {
        "REPRODUCED": ExitCode(
            code=0, meaning="REPRODUCED: the recorded value is within the tolerance"
        ),
        "NOT REPRODUCED": ExitCode(
            code=30,
            meaning="NOT REPRODUCED: outside the tolerance, or a trial INVALID or INCOMPLETE",
        ),
        "NOT COMPARABLE": ExitCode(
            code=31,
            meaning="NOT COMPARABLE: the model, precision or LoadGen settings that ran differ",
        ),
    }
)


def verdict_code_table() -> str:
    """The verdicts' exit codes, as `harness reproduce --help` prints them."""
    lines = [f"  {VERDICT_CODES[v].code:<4} {VERDICT_CODES[v].meaning}" for v in VERDICTS]
    return "verdicts (exit codes; errors exit as `harness --help` lists):\n" + "\n".join(lines)
