"""`harness models fetch`: the official model over HTTP, from a server on 127.0.0.1 only.

The registry entry's URL, md5 and size bound are pointed at a generated file that a local
http.server serves; the real URL is never asked for.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.models.registry import OFFICIAL

NAME = "resnet50-mlperf"
MODEL = bytes(range(256)) * 4096  # 1 MiB standing in for resnet50_v1.onnx


@pytest.fixture
def server() -> Iterator[dict[str, Any]]:
    """A local HTTP server: its URL, what it serves, and the paths it was asked for."""
    state: dict[str, Any] = {"body": MODEL, "asked": []}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state["asked"].append(self.path)
            body = state["body"]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{httpd.server_address[1]}/records/4735647/resnet50_v1.onnx"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BEYOND_TOPS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "models"


def _point_at(monkeypatch: pytest.MonkeyPatch, url: str, data: bytes) -> str:
    """Make the registry entry's URL, md5 and size bound those of `data` at `url`."""
    md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
    entry = dataclasses.replace(OFFICIAL[NAME], url=url, md5=md5, max_bytes=2 * len(data))
    monkeypatch.setitem(OFFICIAL, NAME, entry)
    return md5


def test_fetch_downloads_verifies_and_records_the_sha256(
    server: dict[str, Any],
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    md5 = _point_at(monkeypatch, server["url"], MODEL)
    assert main(["models", "fetch", NAME]) == 0
    out = capsys.readouterr().out.splitlines()
    path = cache / f"{NAME}.onnx"
    sha256 = hashlib.sha256(MODEL).hexdigest()
    assert path.read_bytes() == MODEL
    assert out[-1] == str(path)
    assert f"  md5     {md5} (the published one, verified)" in out
    assert f"  sha256  {sha256} (recorded in {NAME}.json)" in out
    recorded = json.loads((cache / f"{NAME}.json").read_text())
    assert recorded["sha256"] == sha256 and recorded["url"] == server["url"]
    assert server["asked"] == ["/records/4735647/resnet50_v1.onnx"]


def test_a_second_fetch_uses_the_verified_file(
    server: dict[str, Any],
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _point_at(monkeypatch, server["url"], MODEL)
    assert main(["models", "fetch", NAME]) == 0
    assert main(["models", "fetch", NAME]) == 0
    assert len(server["asked"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == str(cache / f"{NAME}.onnx")


def test_a_download_that_does_not_match_the_md5_is_not_kept(
    server: dict[str, Any],
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    expected = _point_at(monkeypatch, server["url"], MODEL)
    server["body"] = MODEL[:-1] + b"\x00"  # one byte changed in transit
    got = hashlib.md5(server["body"], usedforsecurity=False).hexdigest()
    assert main(["models", "fetch", NAME]) == 3
    err = capsys.readouterr().err
    assert err == (
        f"error: {cache / NAME}.onnx: md5 {got} does not match the published {expected}; "
        "the download was removed, run again\n"
    )
    assert not (cache / f"{NAME}.onnx").exists() and not (cache / f"{NAME}.json").exists()


def test_a_server_that_is_not_there_is_one_line(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as probe:
        port = probe.server_address[1]  # closed again: nothing listens there now
    _point_at(monkeypatch, f"http://127.0.0.1:{port}/resnet50_v1.onnx", MODEL)
    assert main(["models", "fetch", NAME]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"error: http://127.0.0.1:{port}/resnet50_v1.onnx: cannot download (")
    assert "use the generated equivalent 'zoo: resnet50'" in err and err.count("\n") == 1


def test_an_unknown_official_model(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "fetch", "bert-mlperf"]) == 3
    assert capsys.readouterr().err == (
        "error: unknown official model 'bert-mlperf' (known: resnet50-mlperf)\n"
    )
