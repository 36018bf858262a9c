"""Issue #23: hostile bundles, as `harness bundle` and `harness verify` meet them.

Every case meets the contract of tests/integration/hostile.py: one `error: ` line with its
fragment, its exit code, no traceback, nothing written outside an empty --out (nor left in
the temporary directory verify unpacks into), and no hang: a FIFO or a device runs as a
child process with a deadline. Bundles are made here, member by member, and signed with a
fresh key, so each holds exactly the one hostile thing its case is about.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.bundle.manifest import FileEntry, Provenance, manifest_bytes
from harness.bundle.signature import signature_bytes
from harness.bundle.tarball import MAX_MEMBER_BYTES, MAX_MEMBERS
from tests.conftest import REPO
from tests.integration.hostile import (
    BUNDLE,
    DEADLINE_S,
    RESULT,
    RUN_FIXTURE,
    TAMPERED,
    UNTRUSTED,
    Case,
    Setup,
    check_error_case,
)
from tests.integration.test_bad_input_corpus import OUT

LOADGEN_FIXTURES = REPO / "tests" / "fixtures" / "loadgen"

# --- bundles ---------------------------------------------------------------------------------

Files = Mapping[str, bytes]
Extra = tuple[tarfile.TarInfo, bytes | None]


def _result_bytes(change: Callable[[dict[str, Any]], None] | None = None) -> bytes:
    data = json.loads((RUN_FIXTURE / "result.json").read_text())
    if change is not None:
        change(data)
    return json.dumps(data, indent=2).encode()


def _detail_bytes(edit: Callable[[str], str] = lambda text: text) -> bytes:
    return edit(
        (LOADGEN_FIXTURES / "singlestream-valid" / "mlperf_log_detail.txt").read_text()
    ).encode()


def _run_files(result: bytes | None = None, detail: bytes | None = None) -> dict[str, bytes]:
    return {
        "runs/r/result.json": result if result is not None else _result_bytes(),
        "runs/r/mlperf_log_detail.txt": detail if detail is not None else _detail_bytes(),
    }


def _key(tmp: Path, name: str) -> Ed25519PrivateKey:
    """A new key; its public half written as tmp/keys/NAME.pub for --trust."""
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    (tmp / "keys").mkdir(exist_ok=True)
    (tmp / "keys" / f"{name}.pub").write_bytes(public + b"\n")
    return key


def _manifest(listed: Files) -> dict[str, Any]:
    entries = [
        FileEntry(path=p, sha256=hashlib.sha256(d).hexdigest(), size_bytes=len(d))
        for p, d in listed.items()
    ]
    made_by = Provenance(harness_version="0.test", git_commit=None, git_dirty=None)
    raw = manifest_bytes(files=entries, roots={"runs/r": "run"}, runs=[], made_by=made_by)
    data: dict[str, Any] = json.loads(raw)
    return data


def _info(name: str, data: bytes | None, kind: bytes = tarfile.REGTYPE) -> Extra:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if data is None and kind == tarfile.REGTYPE else kind
    info.size = len(data or b"")
    return info, data


def _write_bundle(path: Path, manifest: bytes, signature: bytes, members: list[Extra]) -> Path:
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in [
            _info("MANIFEST.json", manifest),
            _info("MANIFEST.sig", signature),
            _info("runs", None),
            _info("runs/r", None),
            *members,
        ]:
            tar.addfile(info, None if data is None else io.BytesIO(data))
    return path


def _bundle(
    files: Files | None = None,
    *,
    listed: Files | None = None,
    manifest: Callable[[dict[str, Any]], str] | None = None,
    extra: Callable[[Path], list[Extra]] = lambda tmp: [],
) -> Callable[[Path], Path]:
    """A bundle signed by tmp/keys/signer: `files` held, `listed` in its manifest."""

    def make(tmp: Path) -> Path:
        held = _run_files() if files is None else files
        data = _manifest(held if listed is None else listed)
        raw = (manifest(data) if manifest is not None else json.dumps(data)).encode()
        key = _key(tmp, "signer")
        members = [_info(name, content) for name, content in held.items()]
        return _write_bundle(tmp / "b.tar", raw, signature_bytes(key, raw), members + extra(tmp))

    return make


def _verify(make: Callable[[Path], Path], *trust: str) -> Setup:
    """`harness verify` (with `trust`: `--trust tmp/keys/NAME.pub`; else --trust-any)."""

    def setup(tmp: Path) -> list[str]:
        bundle = make(tmp)
        for name in trust:
            _key(tmp, name)
        flags = [f for name in trust for f in ("--trust", str(tmp / "keys" / f"{name}.pub"))]
        return ["verify", str(bundle), *(flags or ["--trust-any"])]

    return setup


def _set(*keys: str | int, value: object) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        inner: Any = data
        for key in keys[:-1]:
            inner = inner[key]
        inner[keys[-1]] = value

    return change


def _edit_manifest(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], str]:
    def edit(data: dict[str, Any]) -> str:
        change(data)
        return json.dumps(data)  # NaN and Infinity spelt as Python spells them

    return edit


def _huge_member(tmp: Path) -> list[Extra]:
    info = tarfile.TarInfo("runs/r/huge.bin")
    info.size = 10 * 10**9  # its header alone: refused before a byte of it is read
    return [(info, None)]


def _many_members(tmp: Path) -> list[Extra]:
    return [_info(f"runs/r/f{n}", b"") for n in range(MAX_MEMBERS + 1)]


def _link_member(name: str, target: str) -> Extra:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info, None


def _bundle_run(files: Files) -> Setup:
    """`harness bundle` of a finished run directory holding `files` (names under runs/r/)."""

    def setup(tmp: Path) -> list[str]:
        run = tmp / "run"
        run.mkdir()
        for name, data in files.items():
            (run / name.removeprefix("runs/r/")).write_bytes(data)
        key = tmp / "keys" / "signer"
        key.parent.mkdir()
        (tmp / OUT).mkdir()  # the bundle's folder: it must stay empty
        key.write_bytes(
            Ed25519PrivateKey.generate().private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return ["bundle", str(run), "--key", str(key), "--out", str(tmp / OUT / "b.tar")]

    return setup


NOT_UTF8_LOG = _detail_bytes() + b':::MLLOG {"key": "note", "value": "caf\xe9"}\n'
INFINITE_RESULT = _result_bytes(_set("latency_ns", "p90", value=float("inf")))
INFINITE_LOG = _detail_bytes(
    lambda text: re.sub(
        r'("key": "result_90.00_percentile_latency_ns", "value": )[0-9]+', r"\1Infinity", text
    )
)

BUNDLE_CASES = [
    Case(
        "verify-detail-log-not-utf8-signed-so",
        _verify(_bundle(_run_files(detail=NOT_UTF8_LOG))),
        BUNDLE,
        "runs/r/mlperf_log_detail.txt: not UTF-8 text",
    ),
    Case(
        "verify-detail-log-not-utf8-judges-the-signer-first",
        _verify(_bundle(_run_files(detail=NOT_UTF8_LOG)), "someone-else"),
        UNTRUSTED,
        "which is none of the --trust keys",
    ),
    Case(
        "verify-detail-log-not-utf8-after-signing",
        _verify(_bundle(_run_files(detail=NOT_UTF8_LOG), listed=_run_files())),
        TAMPERED,
        "mlperf_log_detail.txt differs from its sha256",
    ),
    Case(
        "verify-result-infinity-signed-so",
        _verify(_bundle(_run_files(result=INFINITE_RESULT))),
        BUNDLE,
        "runs/r/result.json: latency_ns.p90 is Infinity",
    ),
    Case(
        "verify-result-infinity-after-signing",
        _verify(_bundle(_run_files(result=INFINITE_RESULT), listed=_run_files())),
        TAMPERED,
        "latency_ns.p90 is Infinity, not a finite number; beyond-tops writes no such value",
    ),
    Case(
        "verify-log-latency-infinity",
        _verify(_bundle(_run_files(detail=INFINITE_LOG))),
        BUNDLE,
        "result_90.00_percentile_latency_ns is Infinity",
    ),
    Case(
        "verify-manifest-size-is-text",
        _verify(_bundle(manifest=_edit_manifest(_set("files", 0, "size", value="12")))),
        BUNDLE,
        "files[0].size is '12', not a whole number",
    ),
    Case(
        "verify-manifest-size-10-GB",
        _verify(_bundle(manifest=_edit_manifest(_set("files", 0, "size", value=10 * 10**9)))),
        BUNDLE,
        f"files[0].size is 10000000000, not a whole number 0..{MAX_MEMBER_BYTES:,}",
    ),
    Case(
        "verify-manifest-sha256-is-a-number",
        _verify(_bundle(manifest=_edit_manifest(_set("files", 1, "sha256", value=12)))),
        BUNDLE,
        "files[1].sha256 is 12, not 64 lower-case hex digits",
    ),
    Case(
        "verify-manifest-made-by-is-a-list",
        _verify(_bundle(manifest=_edit_manifest(_set("made_by", value=["me"])))),
        BUNDLE,
        "made_by is a list",
    ),
    Case(
        "verify-manifest-commit-is-a-number",
        _verify(_bundle(manifest=_edit_manifest(_set("made_by", "git_commit", value=7)))),
        BUNDLE,
        "made_by.git_commit is a number (7), not str or null",
    ),
    Case(
        "verify-manifest-files-is-an-object",
        _verify(_bundle(manifest=_edit_manifest(_set("files", value={"a": 1})))),
        BUNDLE,
        "`files` is an object, not a list of objects",
    ),
    Case(
        "verify-manifest-holds-nan",
        _verify(_bundle(manifest=_edit_manifest(_set("runs", value=[{"x": float("nan")}])))),
        BUNDLE,
        "runs[0].x is NaN",
    ),
    Case(
        "verify-manifest-path-climbs-out",
        _verify(_bundle(manifest=_edit_manifest(_set("files", 0, "path", value="runs/../x")))),
        BUNDLE,
        "files[0].path 'runs/../x' climbs out of the bundle",
    ),
    Case(
        "verify-member-climbs-out",
        _verify(_bundle(extra=lambda tmp: [_info("runs/../../evil", b"x")])),
        BUNDLE,
        "climbs out of the bundle with `..`",
    ),
    Case(
        "verify-member-absolute",
        _verify(_bundle(extra=lambda tmp: [_info(str(tmp / "evil"), b"x")])),
        BUNDLE,
        "is an absolute path",
    ),
    Case(
        "verify-member-symlink",
        _verify(_bundle(extra=lambda tmp: [_link_member("runs/r/l", "/etc/passwd")])),
        BUNDLE,
        "is a symbolic link",
    ),
    Case(
        "verify-member-twice",
        _verify(_bundle(extra=lambda tmp: [_info("runs/r/result.json", b"{}")])),
        BUNDLE,
        "appears twice",
    ),
    Case(
        "verify-member-of-10-GB",
        _verify(_bundle(extra=_huge_member)),
        BUNDLE,
        "holds 10,000,000,000 bytes, more than the 4,294,967,296 a bundled file may; refused",
    ),
    Case(
        "verify-too-many-members",
        _verify(_bundle(extra=_many_members)),
        BUNDLE,
        f"more than {MAX_MEMBERS:,} members",
    ),
    Case(
        "bundle-detail-log-not-utf8",
        _bundle_run(_run_files(detail=NOT_UTF8_LOG)),
        RESULT,
        "mlperf_log_detail.txt: not UTF-8 text",
    ),
    Case(
        "bundle-result-infinity",
        _bundle_run(_run_files(result=INFINITE_RESULT)),
        RESULT,
        "result.json: latency_ns.p90 is Infinity",
    ),
    Case(
        "bundle-log-latency-infinity",
        _bundle_run(_run_files(detail=INFINITE_LOG)),
        RESULT,
        "result_90.00_percentile_latency_ns is Infinity",
    ),
]


CASES = BUNDLE_CASES


def test_the_hostile_bundle_cases_are_many_and_their_names_unique() -> None:
    names = [c.name for c in CASES]
    assert len(names) >= 20
    assert len(set(names)) == len(names)


@pytest.mark.timeout(DEADLINE_S + 60)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_hostile_bundle_is_one_error_line(
    case: Case, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_error_case(case, tmp_path, capfd, monkeypatch)
