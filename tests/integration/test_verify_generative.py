"""Issue #27: a bundle of real generative runs carries their token figures, and verify checks them.

Real quick llm-tiny runs (Server and Offline) are bundled; the honest bundle verifies with
the tokens check passed. Each insider edit below is written into the manifest and signed
again with the very key verify trusts: verify still refuses it by the tokens check (exit 28),
because the generation block must equal what the LoadGen log and the SUT's token_times.npz
give, and the token checks run again on those.
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

from harness.bundle.keys import load_private_key
from harness.bundle.manifest import canonical_json
from harness.bundle.signature import signature_bytes
from harness.cli import main
from harness.errors import CrossCheckError
from tests.conftest import REPO
from tests.integration.llm_runs import llm_run
from tests.tar_members import Members, read_members, write_members

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow
Edit = Callable[[Members], None]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("keys")
    assert main(["keygen", "--out", str(directory / "signer")]) == 0
    return directory


@pytest.fixture(scope="module")
def bundle(keys: Path, tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    tmp = tmp_path_factory.mktemp("generative")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        runs = [llm_run(tmp, "Server"), llm_run(tmp, "Offline")]
    out = tmp / "llm.tar"
    args = ["bundle", *(str(p) for p in runs), "--key", str(keys / "signer"), "--out", str(out)]
    assert main(args) == 0
    return out


@pytest.fixture(scope="module")
def cheat_bundle(keys: Path, tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    """A real Offline run whose SUT told LoadGen twice its tokens: the token checks' INVALID."""
    tmp = tmp_path_factory.mktemp("cheat")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        patch.setenv("BT_CHEAT", "token-count")
        patch.setenv("PYTHONPATH", f"{REPO / 'tests' / 'cheats'}:{REPO}")
        run = llm_run(tmp, "Offline")
    out = tmp / "cheat.tar"
    assert main(["bundle", str(run), "--key", str(keys / "signer"), "--out", str(out)]) == 0
    return out


def _member(members: Members, scenario: str, name: str) -> str:
    (found,) = (n for n in members if re.fullmatch(rf"runs/[^/]*{scenario}[^/]*/{name}", n))
    return found


def _result(members: Members, scenario: str) -> tuple[str, dict[str, Any]]:
    path = _member(members, scenario, r"result\.json")
    return path, json.loads(members[path] or b"")


def _re_sign(members: Members, key: Path) -> None:
    manifest = json.loads(members["MANIFEST.json"] or b"")
    for entry in manifest["files"]:
        data = members[entry["path"]] or b""
        entry["sha256"], entry["size"] = hashlib.sha256(data).hexdigest(), len(data)
    members["MANIFEST.json"] = canonical_json(manifest)
    members["MANIFEST.sig"] = signature_bytes(load_private_key(key), members["MANIFEST.json"])


def _edit_result(scenario: str, change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(members: Members) -> None:
        path, result = _result(members, scenario)
        change(result["generation"])
        members[path] = json.dumps(result, indent=2).encode()

    return edit


def _triple_rate(generation: dict[str, Any]) -> None:
    generation["tokens_per_second"] *= 3


def _halve_ttft(generation: dict[str, Any]) -> None:
    generation["ttft_ns"] = {k: v // 2 for k, v in generation["ttft_ns"].items()}


def _triple_in_log_and_result(members: Members) -> None:
    """tokens/s tripled in both files: they agree, but not with the SUT's own token counts."""
    path, result = _result(members, "Offline")
    old = result["generation"]["tokens_per_second"]
    result["generation"]["tokens_per_second"] = old * 3
    members[path] = json.dumps(result, indent=2).encode()
    log = _member(members, "Offline", r"mlperf_log_detail\.txt")
    text = (members[log] or b"").decode()
    line = re.search(r'.*"key": "result_tokens_per_second".*\n', text)
    assert line is not None
    entry = json.loads(line.group(0).split(":::MLLOG", 1)[1])
    entry["value"] = entry["value"] * 3
    members[log] = text.replace(line.group(0), f":::MLLOG {json.dumps(entry)}\n").encode()


def _double_counted_tokens(members: Members) -> None:
    path = _member(members, "Server", r"token_times\.npz")
    with np.load(io.BytesIO(members[path] or b""), allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["tokens"] = arrays["tokens"] * 2
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    members[path] = buffer.getvalue()


def _drop_token_times(members: Members) -> None:
    path = _member(members, "Server", r"token_times\.npz")
    del members[path]
    manifest = json.loads(members["MANIFEST.json"] or b"")
    manifest["files"] = [f for f in manifest["files"] if f["path"] != path]
    members["MANIFEST.json"] = canonical_json(manifest)


EDITS: dict[str, tuple[Edit, str]] = {
    "tokens-per-second-tripled": (
        _edit_result("Server", _triple_rate),
        r"check tokens failed: runs/\S+Server\S*/result\.json: generation\.tokens_per_second "
        r"is [\d.]+, but its files give [\d.]+",
    ),
    "ttft-halved": (
        _edit_result("Server", _halve_ttft),
        r"check tokens failed: runs/\S+/result\.json: generation\.ttft_ns is \{'p50': \d+",
    ),
    "tokens-per-second-tripled-in-the-log-too": (
        _triple_in_log_and_result,
        r"check tokens failed: runs/\S+Offline\S*/result\.json: generation\."
        r"output_tokens_per_query is [\d.]+, but its files give [\d.]+",
    ),
    "sut-token-counts-doubled": (
        _double_counted_tokens,
        r"check tokens failed: runs/\S+/result\.json: generation\.output_tokens is \{",
    ),
    "token-times-left-out": (
        _drop_token_times,
        r"check tokens failed: runs/\S+/result\.json is a generative run's but "
        r"runs/\S+/token_times\.npz is not bundled",
    ),
}


def test_the_honest_bundle_carries_the_generation_block_and_verifies(
    bundle: Path, keys: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    members = read_members(bundle)
    for scenario in ("Server", "Offline"):
        _, result = _result(members, scenario)
        generation = result["generation"]
        assert generation["tokens_per_second"] > 0 and not generation["token_problems"]
        assert _member(members, scenario, r"token_times\.npz")
    assert _result(members, "Server")[1]["generation"]["ttft_ns"]["p99"] > 0
    capsys.readouterr()
    assert main(["verify", str(bundle), "--trust", str(keys / "signer.pub")]) == 0
    out = capsys.readouterr().out
    assert "check tokens passed: 2 generative result.json give their mlperf_log_detail.txt's" in out


@pytest.mark.parametrize("case", EDITS)
def test_an_insider_edit_of_token_figures_signed_again_is_refused(
    case: str, bundle: Path, keys: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit, words = EDITS[case]
    members = read_members(bundle)
    edit(members)
    _re_sign(members, keys / "signer")
    tampered = write_members(tmp_path / "tampered.tar", members)
    capsys.readouterr()
    code = main(["verify", str(tampered), "--trust", str(keys / "signer.pub")])
    out, err = capsys.readouterr()
    assert code == CrossCheckError.exit_code == 28, err
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"error: {tampered}: check ")
    assert re.search(words, err), err
    assert "signature valid" not in out


def test_a_token_check_invalid_run_verifies_and_hiding_its_failure_is_refused(
    cheat_bundle: Path, keys: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    members = read_members(cheat_bundle)
    path, result = _result(members, "Offline")
    assert result["valid"] is False and result["generation"]["token_problems"]
    capsys.readouterr()
    assert main(["verify", str(cheat_bundle), "--trust", str(keys / "signer.pub")]) == 0
    assert "check tokens passed: 1 generative result.json" in capsys.readouterr().out
    # the insider's edit: the run made VALID, its token checks' finding removed, signed again
    result["valid"] = True
    result["generation"]["token_problems"] = []
    result["invalid_reasons"] = []
    members[path] = json.dumps(result, indent=2).encode()
    _re_sign(members, keys / "signer")
    tampered = write_members(tmp_path / "hidden.tar", members)
    code = main(["verify", str(tampered), "--trust", str(keys / "signer.pub")])
    err = capsys.readouterr().err
    assert code == CrossCheckError.exit_code == 28, err
    assert re.search(
        r"check tokens failed: runs/\S+/result\.json: generation\.token_problems is \[\], but "
        r"its files give \['LoadGen was told [\d.]+ tokens per query",
        err,
    ), err
