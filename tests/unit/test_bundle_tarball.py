"""The bundle's tar: written reproducibly; read without links, devices or escaping paths."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from harness.bundle.open import is_bundle
from harness.bundle.tarball import Member, unpack, unsafe_reason, write_tar
from harness.cli import main
from harness.errors import BundleError, ResultError


def _tar(path: Path, *infos: tuple[tarfile.TarInfo, bytes | None]) -> Path:
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in infos:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, None if data is None else io.BytesIO(data))
    return path


def _file(name: str) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), b"data\n"


def _special(name: str, kind: bytes, target: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def _written(members: list[Member]) -> bytes:
    buffer = io.BytesIO()
    write_tar(buffer, members)
    return buffer.getvalue()


def test_the_tar_is_reproducible_with_fixed_headers(tmp_path: Path) -> None:
    source = tmp_path / "log.txt"
    source.write_bytes(b"x" * 5000)
    source.touch()  # a new mtime must not reach the tar
    sha = hashlib.sha256(source.read_bytes()).hexdigest()
    members = [
        Member(name="MANIFEST.json", data=b"{}\n"),
        Member(name="runs"),
        Member(name="runs/" + "r" * 120),  # longer than ustar's 100 bytes: GNU long name
        Member(name="runs/" + "r" * 120 + "/log.txt", source=source, sha256=sha, size=5000),
    ]
    first = _written(members)
    assert first == _written(members)
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        infos = tar.getmembers()
        assert [i.name for i in infos] == [m.name for m in members]
        assert {(i.mtime, i.uid, i.gid, i.uname, i.gname) for i in infos} == {(0, 0, 0, "", "")}
        assert [i.mode for i in infos] == [0o644, 0o755, 0o755, 0o644]
        assert not any(i.pax_headers for i in infos)
        extracted = tar.extractfile(infos[3])
        assert extracted is not None and extracted.read() == b"x" * 5000


def test_a_file_that_changed_since_it_was_hashed_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "log.txt"
    source.write_bytes(b"after\n")
    stale = Member(name="runs/log.txt", source=source, sha256="0" * 64, size=6)
    with pytest.raises(ResultError, match="changed while it was bundled"):
        _written([stale])


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("/etc/passwd", "absolute"),
        ("runs/../../evil", "`..`"),
        ("..", "`..`"),
        ("runs//x", "empty or `.` part"),
        ("./runs/x", "empty or `.` part"),
        ("runs\\x", "backslash"),
        ("C:/x", "absolute"),
    ],
)
def test_unsafe_names(name: str, reason: str) -> None:
    assert reason in (unsafe_reason(name) or "")


def test_safe_names() -> None:
    assert unsafe_reason("runs/g/trial-1/result.json") is None
    assert unsafe_reason("MANIFEST.json") is None


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (_file("/tmp/evil"), "is an absolute path"),
        (_file("runs/../../evil"), "climbs out of the bundle"),
        (_special("runs/link", tarfile.SYMTYPE, "/etc/passwd"), "is a symbolic link"),
        (_special("runs/hard", tarfile.LNKTYPE, "MANIFEST.json"), "is a hard link"),
        (_special("runs/tty", tarfile.CHRTYPE), "is a character device"),
        (_special("runs/disk", tarfile.BLKTYPE), "is a block device"),
        (_special("runs/fifo", tarfile.FIFOTYPE), "is a FIFO"),
    ],
    ids=["absolute", "dotdot", "symlink", "hardlink", "chardev", "blockdev", "fifo"],
)
def test_unsafe_members_are_refused_and_nothing_escapes(
    member: tuple[tarfile.TarInfo, bytes | None], message: str, tmp_path: Path
) -> None:
    archive = _tar(tmp_path / "b.tar", _file("MANIFEST.json"), member)
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(BundleError, match=message):
        unpack(archive, into)
    assert not (tmp_path / "evil").exists() and not Path("/tmp/evil").exists()
    assert list(into.rglob("*")) == []  # every header is checked before anything is written


def test_verify_refuses_an_unsafe_member_with_its_own_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = _tar(tmp_path / "b.tar", _file("MANIFEST.json"), _special("runs/l", tarfile.SYMTYPE))
    assert main(["verify", str(archive)]) == BundleError.exit_code == 20
    err = capsys.readouterr().err
    assert "member 'runs/l' is a symbolic link" in err and len(err.strip().splitlines()) == 1


def test_duplicates_and_clashes_are_refused(tmp_path: Path) -> None:
    twice = _tar(tmp_path / "twice.tar", _file("runs/a"), _file("runs/a"))
    with pytest.raises(BundleError, match="'runs/a' appears twice"):
        unpack(twice, _empty(tmp_path / "1"))
    clash = _tar(tmp_path / "clash.tar", _file("runs/a"), _file("runs/a/b"))
    with pytest.raises(BundleError, match="clashes with a file member"):
        unpack(clash, _empty(tmp_path / "2"))


def test_unpack_hashes_every_file_and_keeps_those_asked_for(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "b.tar", _file("MANIFEST.json"), _file("runs/g/x"))
    unpacked = unpack(archive, _empty(tmp_path / "into"), keep=("MANIFEST.json",))
    digest = hashlib.sha256(b"data\n").hexdigest()
    assert unpacked.files == {"MANIFEST.json": (digest, 5), "runs/g/x": (digest, 5)}
    assert unpacked.kept == {"MANIFEST.json": b"data\n"}
    assert (tmp_path / "into" / "runs" / "g" / "x").read_bytes() == b"data\n"


def test_what_is_not_a_tar_is_a_bundle_error(tmp_path: Path) -> None:
    (tmp_path / "r.tar").write_text("just text\n")
    with pytest.raises(BundleError, match="not a readable tar"):
        unpack(tmp_path / "r.tar", _empty(tmp_path / "into"))
    assert not is_bundle(tmp_path / "r.tar")
    assert not is_bundle(tmp_path)
    assert not is_bundle(_tar(tmp_path / "other.tar", _file("runs/x"), _file("MANIFEST.json")))
    assert is_bundle(_tar(tmp_path / "b.tar", _file("MANIFEST.json")))


def _empty(path: Path) -> Path:
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("bound", "value", "members", "message"),
    [
        ("MAX_MEMBERS", 2, 3, "more than 2 members"),
        ("MAX_MEMBER_BYTES", 4, 1, "holds 5 bytes, more than the 4 a bundled file may"),
        ("MAX_TOTAL_BYTES", 9, 2, "hold more than 9 bytes in all"),
        ("MAX_KEPT_BYTES", 4, 1, "'MANIFEST.json' holds 5 bytes, more than the 4"),
    ],
    ids=["count", "member-size", "total-size", "kept-size"],
)
def test_past_a_bound_nothing_is_unpacked(
    bound: str,
    value: int,
    members: int,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(f"harness.bundle.tarball.{bound}", value)
    names = ["MANIFEST.json"] if bound == "MAX_KEPT_BYTES" else [f"f{n}" for n in range(members)]
    archive = _tar(tmp_path / "b.tar", *((tarfile.TarInfo(n), b"12345") for n in names))
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(BundleError, match=message) as caught:
        unpack(archive, into, keep=("MANIFEST.json",))
    assert "refused before unpacking" in str(caught.value)
    assert list(into.iterdir()) == []


def test_bundle_refuses_a_file_verify_would_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("harness.bundle.make.MAX_MEMBER_BYTES", 100)
    run = tmp_path / "run"
    run.mkdir()
    (run / "result.json").write_text("{}")
    (run / "telemetry.csv").write_bytes(b"x" * 101)
    assert main(["keygen", "--out", str(tmp_path / "key")]) == 0
    out = tmp_path / "b.tar"
    assert main(["bundle", str(run), "--key", str(tmp_path / "key"), "--out", str(out)]) == 6
    err = capsys.readouterr().err
    assert f"{run / 'telemetry.csv'}: larger than the 100 bytes a bundled file may hold" in err
    assert not out.exists()
