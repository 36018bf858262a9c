"""Model registry: the generated-model cache and official downloads (without network)."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import onnx
import pytest

import harness.models.zoo as zoo
from harness.errors import ModelError
from harness.models.registry import OFFICIAL, cache_dir, official_model_path, zoo_model_path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty model cache under tmp_path, via BEYOND_TOPS_CACHE."""
    monkeypatch.setenv("BEYOND_TOPS_CACHE", str(tmp_path))
    return tmp_path / "models"


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count calls of the tiny model's builder (the seeds it was called with)."""
    calls: list[int] = []
    entry = zoo.ZOO["tiny"]
    real: Callable[[int, int], onnx.ModelProto] = entry.versioned

    def counting(seed: int, version: int) -> onnx.ModelProto:
        calls.append(seed)
        return real(seed, version)

    patched = {**zoo.ZOO, "tiny": dataclasses.replace(entry, versioned=counting)}
    monkeypatch.setattr(zoo, "ZOO", patched)
    return calls


def _manifest(cache: Path, seed: int = 0) -> Path:
    return cache / f"tiny-g{zoo.ZOO['tiny'].generator_version}-s{seed}.json"


def test_cache_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BEYOND_TOPS_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" / "models"


@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
def test_cache_dir_defaults_to_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    if value is None:
        monkeypatch.delenv("BEYOND_TOPS_CACHE", raising=False)
    else:
        monkeypatch.setenv("BEYOND_TOPS_CACHE", value)
    assert cache_dir() == tmp_path / ".cache" / "beyond-tops" / "models"


def test_zoo_model_built_once_then_cached(cache: Path, builds: list[int]) -> None:
    path = zoo_model_path("tiny")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    assert path == cache / f"tiny-{digest[:16]}.onnx"
    assert data == zoo.build_tiny(0).SerializeToString()
    assert json.loads(_manifest(cache).read_text()) == {"file": path.name, "sha256": digest}
    assert builds == [0]
    mtime = path.stat().st_mtime_ns

    assert zoo_model_path("tiny") == path
    assert builds == [0]  # not rebuilt
    assert path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in cache.iterdir()) == sorted([path.name, _manifest(cache).name])


def test_zoo_model_explicit_root(tmp_path: Path, builds: list[int]) -> None:
    root = tmp_path / "elsewhere"
    path = zoo_model_path("tiny", root=root)
    assert path.parent == root
    assert path.is_file()
    assert builds == [0]


def test_zoo_model_seed_has_its_own_entry(cache: Path, builds: list[int]) -> None:
    seed0 = zoo_model_path("tiny")
    seed1 = zoo_model_path("tiny", seed=1)
    assert seed0 != seed1
    assert builds == [0, 1]
    assert _manifest(cache, 1).is_file()
    assert zoo_model_path("tiny", seed=1) == seed1
    assert builds == [0, 1]


# The shipped results (results/published) ran resnet50 of generator version 1.
RESNET50_V1_SHA256 = "385c5a0a2886089029c0c557d25f5d5811fdb11a471b02aadf6c65d862c4cb7b"


def test_each_generator_version_has_its_own_entry_and_bytes(cache: Path) -> None:
    current = zoo_model_path("tiny")
    first = zoo_model_path("tiny", generator=1)
    assert first != current
    assert (cache / "tiny-g1-s0.json").is_file()
    assert (cache / f"tiny-g{zoo.ZOO['tiny'].generator_version}-s0.json").is_file()
    assert first.read_bytes() == zoo.build_tiny(0, generator=1).SerializeToString()
    assert current.read_bytes() == zoo.build_tiny(0).SerializeToString()
    assert zoo_model_path("tiny", generator=zoo.ZOO["tiny"].generator_version) == current


def test_generator_version_1_rebuilds_the_shipped_resnet50(cache: Path) -> None:
    """reproduce of results/published finds its model: version 1 is still byte-identical."""
    path = zoo_model_path("resnet50", generator=1)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == RESNET50_V1_SHA256
    current = zoo.ZOO["resnet50"].build(0).SerializeToString()
    assert hashlib.sha256(current).hexdigest() != RESNET50_V1_SHA256  # a new generator: new bytes


def test_unknown_generator_version_names_the_known_ones(cache: Path) -> None:
    with pytest.raises(ModelError, match=r"model.generator: .*'tiny' has no generator version 9 "):
        zoo_model_path("tiny", generator=9)
    assert not cache.exists() or not list(cache.iterdir())


def test_corrupted_model_is_rebuilt(cache: Path, builds: list[int]) -> None:
    path = zoo_model_path("tiny")
    good = path.read_bytes()
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0xFF  # same size, one byte altered
    path.write_bytes(bytes(bad))

    assert zoo_model_path("tiny") == path
    assert builds == [0, 0]
    assert path.read_bytes() == good


def test_deleted_model_is_rebuilt(cache: Path, builds: list[int]) -> None:
    path = zoo_model_path("tiny")
    path.unlink()
    assert zoo_model_path("tiny") == path
    assert path.is_file()
    assert builds == [0, 0]


@pytest.mark.parametrize(
    "manifest_text",
    [None, "", "{not json", "[1, 2]", '{"file": "nope.onnx", "sha256": "00"}'],
    ids=["missing", "empty", "not-json", "list", "names-missing-file"],
)
def test_missing_or_bad_manifest_rebuilds(
    cache: Path, builds: list[int], manifest_text: str | None
) -> None:
    path = zoo_model_path("tiny")
    manifest = _manifest(cache)
    if manifest_text is None:
        manifest.unlink()
    else:
        manifest.write_text(manifest_text, encoding="utf-8")

    assert zoo_model_path("tiny") == path
    assert builds == [0, 0]
    meta = json.loads(manifest.read_text())
    assert meta == {"file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def test_manifest_without_sha256_rebuilds(cache: Path, builds: list[int]) -> None:
    path = zoo_model_path("tiny")
    _manifest(cache).write_text(json.dumps({"file": path.name}), encoding="utf-8")
    assert zoo_model_path("tiny") == path
    assert builds == [0, 0]


def test_unknown_zoo_model(cache: Path) -> None:
    with pytest.raises(ModelError) as info:
        zoo_model_path("resnet51")
    assert str(info.value) == (
        "model.zoo: unknown zoo model 'resnet51' "
        "(known: bert_base, efficientnet-lite0, mobilenet_v2, null, resnet50, tiny)"
    )
    assert info.value.exit_code == 3
    assert not cache.exists()


# --- official downloads -----------------------------------------------------------------------


def test_official_model_offline_names_the_generated_equivalent(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    urls: list[str] = []

    def no_network(url: str, *args: Any, **kwargs: Any) -> Any:
        urls.append(url)
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    entry = OFFICIAL["resnet50-mlperf"]
    with pytest.raises(ModelError) as info:
        official_model_path("resnet50-mlperf")
    target = cache / "resnet50-mlperf.onnx"
    assert str(info.value) == (
        f"{entry.url}: cannot download (no network); without network access use the generated "
        f"equivalent 'zoo: resnet50', or place the file at {target}"
    )
    assert info.value.exit_code == 3
    assert urls == [entry.url]
    assert not target.exists()


def test_official_model_timeout_is_a_model_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def timeout(url: str, *args: Any, **kwargs: Any) -> Any:
        raise TimeoutError("timed out")

    monkeypatch.setattr(urllib.request, "urlopen", timeout)
    with pytest.raises(ModelError, match=re.escape("cannot download (timed out)")):
        official_model_path("resnet50-mlperf", root=tmp_path)


def _pin_md5(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    entry = OFFICIAL["resnet50-mlperf"]
    md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
    monkeypatch.setitem(OFFICIAL, "resnet50-mlperf", dataclasses.replace(entry, md5=md5))


def _serve(monkeypatch: pytest.MonkeyPatch, data: bytes) -> list[str]:
    """Make urlopen answer every URL with `data`; return the URLs asked for."""
    urls: list[str] = []

    def urlopen(url: str, *args: Any, **kwargs: Any) -> io.BytesIO:
        urls.append(url)
        return io.BytesIO(data)

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    return urls


def test_official_model_already_present_is_not_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    urls = _serve(monkeypatch, b"from the network")
    placed = tmp_path / "resnet50-mlperf.onnx"
    placed.write_bytes(b"placed by hand")
    _pin_md5(monkeypatch, b"placed by hand")
    assert official_model_path("resnet50-mlperf", root=tmp_path) == placed
    assert placed.read_bytes() == b"placed by hand"
    assert urls == []


def test_official_model_download_is_written_and_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    urls = _serve(monkeypatch, b"model bytes")
    _pin_md5(monkeypatch, b"model bytes")
    path = official_model_path("resnet50-mlperf", root=tmp_path)
    assert path == tmp_path / "resnet50-mlperf.onnx"
    assert path.read_bytes() == b"model bytes"
    assert urls == [OFFICIAL["resnet50-mlperf"].url]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "resnet50-mlperf.json",
        "resnet50-mlperf.onnx",
    ]


def test_official_model_md5_mismatch_removes_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _serve(monkeypatch, b"corrupted in transit")
    _pin_md5(monkeypatch, b"model bytes")
    expected = hashlib.md5(b"model bytes", usedforsecurity=False).hexdigest()
    got = hashlib.md5(b"corrupted in transit", usedforsecurity=False).hexdigest()
    target = tmp_path / "resnet50-mlperf.onnx"
    with pytest.raises(ModelError) as info:
        official_model_path("resnet50-mlperf", root=tmp_path)
    assert str(info.value) == (
        f"{target}: md5 {got} does not match the published {expected}; the download was "
        "removed, run again"
    )
    assert info.value.exit_code == 3
    assert list(tmp_path.iterdir()) == []


def test_unknown_official_model(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as info:
        official_model_path("bert-mlperf", root=tmp_path)
    assert str(info.value) == "unknown official model 'bert-mlperf' (known: resnet50-mlperf)"
    assert info.value.exit_code == 3


# --- issue #11: the official model is verified, bounded and recorded ---------------------------


def test_the_official_resnet50_is_pinned_to_its_published_md5() -> None:
    entry = OFFICIAL["resnet50-mlperf"]
    assert entry.md5 == "f6a4da60cd5f084d97efc2c1ddb10beb"  # Zenodo 4735647, resnet50_v1.onnx
    assert entry.url.endswith("/4735647/files/resnet50_v1.onnx")
    assert 100 * 2**20 <= entry.max_bytes <= 200 * 2**20


@pytest.fixture
def server() -> Iterator[tuple[str, dict[str, Any]]]:
    """A local HTTP server on 127.0.0.1: its base URL, and what it answers (body, length)."""
    answer: dict[str, Any] = {"body": b"", "length": None}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # the connection's close ends a body without a length

        def do_GET(self) -> None:
            body = answer["body"]
            self.send_response(200)
            if answer["length"] is not None:  # None: no length, the body ends at close
                self.send_header("Content-Length", str(answer["length"]))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", answer
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _point_at(monkeypatch: pytest.MonkeyPatch, base: str, **changes: Any) -> None:
    entry = OFFICIAL["resnet50-mlperf"]
    changed = dataclasses.replace(entry, url=f"{base}/resnet50_v1.onnx", **changes)
    monkeypatch.setitem(OFFICIAL, "resnet50-mlperf", changed)


def test_an_official_download_over_http_records_its_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: tuple[str, dict[str, Any]]
) -> None:
    base, answer = server
    answer["body"] = b"onnx bytes"
    _point_at(monkeypatch, base, md5=hashlib.md5(b"onnx bytes", usedforsecurity=False).hexdigest())
    path = official_model_path("resnet50-mlperf", root=tmp_path)
    assert path.read_bytes() == b"onnx bytes"
    meta = json.loads((tmp_path / "resnet50-mlperf.json").read_text())
    assert meta["sha256"] == hashlib.sha256(b"onnx bytes").hexdigest()
    assert meta["md5"] == OFFICIAL["resnet50-mlperf"].md5


def test_an_official_download_with_the_wrong_md5_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: tuple[str, dict[str, Any]]
) -> None:
    base, answer = server
    answer["body"] = b"a page of html"
    _point_at(monkeypatch, base)  # the real published md5
    with pytest.raises(ModelError, match="does not match the published f6a4da60cd5f"):
        official_model_path("resnet50-mlperf", root=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("announced", [2048, None])
def test_an_official_download_larger_than_its_bound_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    server: tuple[str, dict[str, Any]],
    announced: int | None,
) -> None:
    base, answer = server
    answer["body"] = b"x" * 2048
    answer["length"] = announced  # None: no Content-Length, only the read's bound stops it
    _point_at(monkeypatch, base, max_bytes=1024)
    with pytest.raises(ModelError, match=r"(larger|more) than 1024 bytes"):
        official_model_path("resnet50-mlperf", root=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_changed_official_file_is_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    urls = _serve(monkeypatch, b"model bytes")
    _pin_md5(monkeypatch, b"model bytes")
    path = official_model_path("resnet50-mlperf", root=tmp_path)
    path.write_bytes(b"model bytez")  # changed after it was verified
    with pytest.raises(ModelError, match="does not match the published"):
        official_model_path("resnet50-mlperf", root=tmp_path)
    assert path.read_bytes() == b"model bytez"  # a file placed or changed by hand is not deleted
    assert urls == [OFFICIAL["resnet50-mlperf"].url]


def test_models_list_names_each_generator_version(capsys: pytest.CaptureFixture[str]) -> None:
    from harness import cli

    assert cli.main(["models", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    resnet = next(line for line in lines if line.startswith("resnet50 "))
    assert resnet.endswith("; generator 2 (buildable: 1, 2)")
    bert = next(line for line in lines if line.startswith("bert_base "))
    assert bert.endswith("; generator 1 (buildable: 1)")
