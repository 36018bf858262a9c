"""reproduction.json: a verdict's versioned file, its writer, its reader and its printed form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.records.codec import from_data, to_object
from harness.records.metrics import metric
from harness.reproduce.codes import VERDICT_CODES
from harness.reproduce.verdict import Reproduction
from harness.results.schema import schema_problem
from harness.strictjson import Format, read_versioned

# History: 1, the first.
REPRODUCTION_SCHEMA_VERSION = 1
SCHEMA_FILE = "reproduction.schema.json"  # in harness/schemas
REPRODUCTION = Format(
    what="a beyond-tops reproduction file",
    newest=REPRODUCTION_SCHEMA_VERSION,
    oldest=1,
    older_fix="run `harness reproduce` again",
)


def to_dict(reproduction: Reproduction) -> dict[str, Any]:
    """JSON-ready data, schema_version first."""
    return {"schema_version": REPRODUCTION_SCHEMA_VERSION, **to_object(reproduction)}


def write_reproduction(reproduction: Reproduction, path: Path) -> Path:
    """Write reproduction.json atomically; a new file only, never over an earlier verdict."""
    if path.exists():
        raise ResultError(f"{path}: already exists; a verdict is never overwritten")
    data = to_dict(reproduction)
    problem = schema_problem(data, SCHEMA_FILE)
    if problem is not None:  # a bug here, not the user's: the record broke its own schema
        raise ResultError(f"{path}: not written, the verdict breaks {SCHEMA_FILE} ({problem})")
    atomic_write_text(path, json.dumps(data, indent=2, allow_nan=False) + "\n")
    return path


def read_reproduction(path: Path) -> Reproduction:
    """Read reproduction.json; ResultError, in one line, for anything this version cannot read."""
    data = read_versioned(path, REPRODUCTION, ResultError).data
    problem = schema_problem(data, SCHEMA_FILE)
    if problem is not None:
        raise ResultError(f"{path}: not a reproduction file ({problem})")
    return from_data(Reproduction, {k: v for k, v in data.items() if k != "schema_version"})


def render_reproduction(reproduction: Reproduction) -> str:
    """The verdict as the terminal shows it: what was compared, the spread, why."""
    rep = reproduction
    lines = [
        f"reproduce {rep.scenario_name} ({rep.scenario}, {metric(rep.metric).label}): "
        f"{rep.verdict}",
        _row("recorded", _recorded(rep)),
        _row("reproduced", _reproduced(rep)),
        _row("ratio", _ratio(rep)),
    ]
    if rep.welch is not None:
        lines.append(_row("t-test", _welch(rep)))
    lines += [_row("reason", reason) for reason in rep.reasons]
    if rep.explanations:
        lines.append(_row("differences", "recorded != reproduced, which may explain a gap:"))
        lines += [f"    {line}" for line in rep.explanations]
    if rep.bundle is not None:
        lines.append(_row("bundle", _bundle(rep)))
    code = VERDICT_CODES[rep.verdict]
    lines.append(_row("exit code", f"{code.code} ({code.meaning.split(':', 1)[0]})"))
    return "\n".join(lines)


def _row(label: str, text: str) -> str:
    return f"  {label:<12} {text}"


def _value(rep: Reproduction, value: float) -> str:
    judged = metric(rep.metric)  # the catalogue's row of the metric the verdict judged
    return f"{judged.shown(value):,.4g} {judged.unit}"


def _recorded(rep: Reproduction) -> str:
    if rep.recorded_value is None:
        return f"no value ({rep.recorded_path})"
    count = len(rep.recorded_values)
    what = "1 run" if count == 1 else f"median of {count} trials"
    return f"{_value(rep, rep.recorded_value)} ({what}: {rep.recorded_path})"


def _reproduced(rep: Reproduction) -> str:
    spread = rep.reproduced
    if spread is None:
        return f"no trial left a value ({rep.reproduced_path})"
    return (
        f"median {_value(rep, spread.median)} over {len(spread.values)} of "
        f"{rep.reproduced_requested} trials: min {_value(rep, spread.min)}, "
        f"max {_value(rep, spread.max)}, CoV {spread.cov * 100:.2f} % ({rep.reproduced_path})"
    )


def _ratio(rep: Reproduction) -> str:
    tolerance = f"tolerance {rep.tolerance_key} {rep.tolerance * 100:g} %"
    if rep.ratio is None or rep.deviation is None:
        return f"n/a ({tolerance})"
    return (
        f"{rep.ratio:.4f} recorded / reproduced median ({rep.deviation * 100:.2f} % apart; "
        f"{tolerance})"
    )


def _welch(rep: Reproduction) -> str:
    welch = rep.welch
    if welch is None or welch.p_value is None:
        return welch.note if welch is not None else "n/a"
    t = "±inf" if welch.t_statistic is None else f"{welch.t_statistic:.3f}"
    return f"Welch p = {welch.p_value:.4g} (t = {t}): {welch.note}"


def _bundle(rep: Reproduction) -> str:
    bundle = rep.bundle
    if bundle is None:
        return ""
    verified = "signature verified" if bundle.verified else "signature NOT verified"
    unchecked = "not checked against a key (no --trust PUBKEY)"
    trusted = "a trusted key" if bundle.trusted else unchecked
    return f"{bundle.path}: {verified}, signer {bundle.signer_fingerprint}, {trusted}"
