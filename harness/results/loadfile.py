"""load.json: a load sweep's summary file (Server latency against arrival rate), versioned.

History of LOAD_SCHEMA_VERSION: 1, the first; 2, a generative model's token figures per
rate (`tokens`), its TTFT / TPOT limits (`ttft_limit_ns`, `tpot_limit_ns`) and whether it is
MLPerf's Interactive (`interactive`): None, None and false in a 1.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.records.codec import from_data, to_object
from harness.records.loadsweep import LoadSweep
from harness.strictjson import Format, JsonObject, read_versioned

LOAD_SCHEMA_VERSION = 2
LOAD_KIND = "load"
LOAD_FORMAT = Format(
    what="a beyond-tops load sweep file",
    newest=LOAD_SCHEMA_VERSION,
    oldest=1,
    kind=LOAD_KIND,
    older_fix="re-run it",
)


def write_load(path: Path, sweep: LoadSweep) -> None:
    """Write load.json atomically."""
    data = {"schema_version": LOAD_SCHEMA_VERSION, "kind": LOAD_KIND, **to_object(sweep)}
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def read_load(path: Path) -> LoadSweep:
    """Read load.json; ResultError, in one line, for anything this version cannot read."""
    read = read_versioned(path, LOAD_FORMAT, ResultError)
    data = {k: v for k, v in read.data.items() if k not in ("schema_version", "kind")}
    if read.version == 1:
        data = _from_1(data)
    try:
        return from_data(LoadSweep, data)
    except ResultError as exc:
        raise ResultError(f"{path}: {exc}; re-run it") from None


def _from_1(data: JsonObject) -> JsonObject:
    """A version 1 file as a 2: no token figures, no token limits (it had no generative sweep)."""
    points = data.get("points")
    if isinstance(points, list):
        points = [{**p, "tokens": None} if isinstance(p, dict) else p for p in points]
    return {
        **data,
        "points": points,
        "ttft_limit_ns": None,
        "tpot_limit_ns": None,
        "interactive": False,
    }
