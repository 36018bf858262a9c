"""Issue #25: insider edits of real runs' bundles, signed again with the trusted key, refused.

A signature proves only that its signer vouches for the bytes. Each case here edits a bundle
of real LoadGen runs (a quick SingleStream run and a trials group of two), writes the new
sha256s into the manifest and signs it again with the very key verify trusts: verify must
still refuse it, by the named cross-check, in one `error:` line, with exit code 28.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.bundle.crosscheck import PROVES
from harness.bundle.keys import load_private_key
from harness.bundle.manifest import canonical_json
from harness.bundle.signature import signature_bytes
from harness.cli import main
from harness.errors import CrossCheckError
from tests.conftest import REPO, TINY_SS, write_scenario
from tests.tar_members import Members, read_members, write_members

pytestmark = pytest.mark.slow
Edit = Callable[[Members], None]
CHECKS = (
    "result-numbers",
    "detail-log",
    "provenance",
    "submission-claim",
    "trials",
    "sweep",
    "query-latencies",
    "tokens",
)
PUBLISHED = REPO / "results" / "published"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> tuple[Path, Path]:
    """A real quick SingleStream run, and a real trials group of two such runs."""
    tmp = tmp_path_factory.mktemp("crosschecked")
    single = write_scenario(tmp / "single.yaml", TINY_SS)
    trials = write_scenario(tmp / "trials.yaml", TINY_SS.replace("trials: 1", "trials: 2"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        assert main(["run", str(single), "--out", str(tmp / "single")]) == 0
        assert main(["run", str(trials), "--out", str(tmp / "trials")]) == 0
    ((run,), (group,)) = (list((tmp / name).iterdir()) for name in ("single", "trials"))
    assert (group / "trials.json").is_file()
    return run, group


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("keys")
    assert main(["keygen", "--out", str(directory / "signer")]) == 0
    return directory


@pytest.fixture(scope="module")
def bundle(runs: tuple[Path, Path], keys: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "runs.tar"
    args = ["bundle", *(str(p) for p in runs), "--key", str(keys / "signer"), "--out", str(out)]
    assert main(args) == 0
    return out


def _one(members: Members, pattern: str) -> str:
    (name,) = (n for n in members if re.fullmatch(pattern, n))
    return name


def _single_result(members: Members) -> str:
    return _one(members, r"runs/[^/]*SingleStream[^/]*/result\.json")


def _edit_json(pick: Callable[[Members], str], change: Callable[[Any], None]) -> Edit:
    def edit(members: Members) -> None:
        path = pick(members)
        data = json.loads(members[path] or b"")
        change(data)
        members[path] = json.dumps(data, indent=2).encode()

    return edit


def _re_sign(key: Path) -> Edit:
    """Write every file's new sha256 and size into the manifest, and sign it with `key`."""

    def re_sign(members: Members) -> None:
        manifest = json.loads(members["MANIFEST.json"] or b"")
        manifest["files"] = [f for f in manifest["files"] if f["path"] in members]
        for entry in manifest["files"]:
            data = members[entry["path"]] or b""
            entry["sha256"], entry["size"] = hashlib.sha256(data).hexdigest(), len(data)
        members["MANIFEST.json"] = canonical_json(manifest)
        members["MANIFEST.sig"] = signature_bytes(load_private_key(key), members["MANIFEST.json"])

    return re_sign


def _relabel(result: dict[str, Any]) -> None:
    result["profile"], result["submission_valid"] = "submission", True


def _triple_and_drop_the_log(members: Members) -> None:
    path = _single_result(members)
    result = json.loads(members[path] or b"")
    result["samples_per_second"] *= 3
    members[path] = json.dumps(result, indent=2).encode()
    del members[path.replace("result.json", "mlperf_log_detail.txt")]


def _median(trials: dict[str, Any]) -> None:
    trials["stats"]["median"] *= 0.5


def _halve_latencies(members: Members) -> None:
    path = _one(members, r"runs/[^/]*SingleStream[^/]*/query_latencies\.npz")
    with np.load(io.BytesIO(members[path] or b""), allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["complete_ns"] = arrays["issue_ns"] + (arrays["complete_ns"] - arrays["issue_ns"]) // 2
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    members[path] = buffer.getvalue()


def _model_sha(manifest: dict[str, Any]) -> None:
    manifest["runs"][0]["model_sha256"] = "0" * 64


def _edit_manifest(members: Members) -> None:
    manifest = json.loads(members["MANIFEST.json"] or b"")
    _model_sha(manifest)
    members["MANIFEST.json"] = canonical_json(manifest)


# Each insider edit, and the words of the check that must refuse it once signed again.
EDITS: dict[str, tuple[Edit, str]] = {
    "quick-run-relabelled-submission": (
        _edit_json(_single_result, _relabel),
        r"check submission-claim failed: runs/\S+/result\.json says profile: submission, "
        r"submission_valid: true, but runs/\S+/mlperf_log_detail\.txt logs "
        r"effective_min_duration_ms 1000, under MLPerf's 600000",
    ),
    "samples-per-second-tripled-detail-log-left-out": (
        _triple_and_drop_the_log,
        r"check detail-log failed: runs/(\S+)/result\.json is in MANIFEST\.json but "
        r"runs/\1/mlperf_log_detail\.txt is not",
    ),
    "trials-median-edited": (
        _edit_json(lambda m: _one(m, r"runs/[^/]*-trials-[^/]*/trials\.json"), _median),
        r"check trials failed: runs/\S+/trials\.json: stats \(\S+\) median is \S+, "
        r"recomputed from its 2 trials' result\.json: ",
    ),
    "query-latencies-halved": (
        _halve_latencies,
        r"check query-latencies failed: runs/\S+/query_latencies\.npz: its (p50|p90|p99) is "
        r"\d+ ns, but LoadGen's (p50|p90|p99) is \d+ ns",
    ),
    "manifest-model-sha256-not-the-results": (
        _edit_manifest,
        r"check provenance failed: MANIFEST\.json's run runs/\S+ has model_sha256 \"0{64}\" "
        r"but runs/\S+/result\.json has \"[0-9a-f]{64}\"",
    ),
}


@pytest.mark.parametrize("case", EDITS)
def test_an_insider_edit_signed_again_with_the_trusted_key_is_refused(
    case: str, bundle: Path, keys: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit, words = EDITS[case]
    members = read_members(bundle)
    edit(members)
    _re_sign(keys / "signer")(members)
    tampered = write_members(tmp_path / "tampered.tar", members)
    capsys.readouterr()
    code = main(["verify", str(tampered), "--trust", str(keys / "signer.pub")])
    out, err = capsys.readouterr()
    assert code == CrossCheckError.exit_code == 28
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"error: {tampered}: check ")
    assert re.search(words, err), err
    assert "signature valid" not in out


def test_the_honest_bundle_passes_and_says_what_it_proves(
    bundle: Path, keys: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["verify", str(bundle), "--trust", str(keys / "signer.pub")]) == 0
    out = capsys.readouterr().out
    assert f"{bundle}: signature valid; {len(CHECKS)} checks passed" in out
    assert f"  proves   {PROVES}\n" in out
    passed = re.findall(r"^  check (\S+) passed: ", out, re.MULTILINE)
    assert passed == list(CHECKS)
    assert "check result-numbers passed: 3 result.json agree with their LoadGen logs" in out
    assert "check trials passed: 1 trials.json, statistics recomputed from their 2 trials'" in out
    assert "check query-latencies passed: 3 query_latencies.npz give their LoadGen log's" in out
    commits = re.findall(r"^  commit   (.+) \((clean|dirty|unknown) tree\)$", out, re.MULTILINE)
    assert len(commits) == 4 and commits[0][0].startswith("made by: beyond-tops ")
    dirty = [what for what, tree in commits if tree == "dirty"]
    warned = re.findall(r"^  warning  (.+?): the tree at \S+ had uncommitted changes", out, re.M)
    assert [w.split(":")[0] for w in warned] == [d.split(":")[0] for d in dirty]


@pytest.mark.parametrize("scenario", ["Offline", "SingleStream"])
def test_the_shipped_bundles_verify_and_warn_of_their_dirty_tree(
    scenario: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (shipped,) = PUBLISHED.glob(f"*-{scenario}.bundle.tar")
    capsys.readouterr()
    trust = PUBLISHED / "beyond-tops-founders.pub"
    assert main(["verify", str(shipped), "--trust", str(trust)]) == 0
    out = capsys.readouterr().out
    assert "  commit   made by: beyond-tops 0.1.0 at 64890a6" in out and "(dirty tree)" in out
    assert "  warning  made by: the tree at 64890a6" in out
    assert "check submission-claim passed: 1 result.json claiming the submission profile" in out
