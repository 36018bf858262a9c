"""harness.models.torch_legacy on the real wheel file, and on cut, tampered and hostile bytes."""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from harness.errors import ModelError
from harness.models import zoo_efficientnet as eff
from harness.models.torch_legacy import MAGIC, PROTOCOL, load_state_dict, read_pinned

# sha256 over every tensor's name, dtype, shape and contiguous bytes, in the file's order.
STATE_SHA256 = "02365a1f707df1f982092dca6c5537f0637724decadc2464559437c3c14f0a4d"


@pytest.fixture(scope="module")
def weights_file() -> Path:
    return eff.weights_path()


@pytest.fixture(scope="module")
def tensors() -> dict[str, np.ndarray]:
    return eff.read_weights()


def test_the_wheel_file_is_the_pinned_one(weights_file: Path) -> None:
    assert weights_file.stat().st_size == eff.WEIGHTS_BYTES == 18_826_032
    assert hashlib.sha256(weights_file.read_bytes()).hexdigest() == eff.WEIGHTS_SHA256


def test_the_state_dict_has_its_296_tensors_with_their_shapes(
    tensors: dict[str, np.ndarray],
) -> None:
    assert len(tensors) == 296
    assert tensors["_conv_stem.weight"].shape == (32, 3, 3, 3)
    assert tensors["_blocks.0._depthwise_conv.weight"].shape == (32, 1, 3, 3)
    assert tensors["_blocks.15._project_conv.weight"].shape == (320, 1152, 1, 1)
    assert tensors["_conv_head.weight"].shape == (1280, 320, 1, 1)
    assert tensors["_fc.weight"].shape == (1000, 1280)
    trainable = sum(
        v.size for k, v in tensors.items() if v.dtype == np.float32 and "running" not in k
    )
    assert trainable == 4_652_008  # EfficientNet-Lite0's 4.65M parameters
    assert all(v.flags.c_contiguous for v in tensors.values())


def test_the_tensors_checksum_including_the_strided_ones(tensors: dict[str, np.ndarray]) -> None:
    digest = hashlib.sha256()
    for name, array in tensors.items():
        digest.update(name.encode())
        digest.update(str(array.dtype).encode())
        digest.update(str(array.shape).encode())
        digest.update(array.tobytes())
    assert digest.hexdigest() == STATE_SHA256
    # The stem is stored with stride (1, 32, 288, 96): element [5, 1, 2, 0] sits at 5 + 32 + 576.
    assert float(tensors["_conv_stem.weight"][5, 1, 2, 0]) == pytest.approx(0.06300771236419678)


def test_a_truncated_file_is_refused_before_it_is_read(weights_file: Path, tmp_path: Path) -> None:
    short = tmp_path / "short.pth"
    short.write_bytes(weights_file.read_bytes()[:-1000])
    with pytest.raises(ModelError, match=r"18825032 bytes, the pinned file has 18826032"):
        eff.read_weights(short)


def test_a_tampered_file_is_refused_by_its_sha256(weights_file: Path, tmp_path: Path) -> None:
    data = bytearray(weights_file.read_bytes())
    data[-5] ^= 0x01  # one bit of the classifier's last bias
    tampered = tmp_path / "tampered.pth"
    tampered.write_bytes(bytes(data))
    with pytest.raises(ModelError, match=f"is not the pinned {eff.WEIGHTS_SHA256}"):
        eff.read_weights(tampered)


def test_a_missing_file_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="cannot read the weights"):
        read_pinned(tmp_path / "none.pth", size_bytes=1, sha256="0" * 64)


def _header() -> bytes:
    return b"".join(
        pickle.dumps(part, protocol=2) for part in (MAGIC, PROTOCOL, {"little_endian": True})
    )


def test_a_pickle_naming_any_other_global_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hostile = _header() + pickle.dumps((os.system, (f"touch {marker}",)), protocol=2)
    with pytest.raises(ModelError, match=r"global (posix|os)\.system is not allowed"):
        load_state_dict(hostile)
    assert not marker.exists()


class _Reduce:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (eval, ("1",))


def test_a_reduce_to_a_builtin_is_refused() -> None:
    with pytest.raises(ModelError, match=r"global (__builtin__|builtins)\.eval is not allowed"):
        load_state_dict(_header() + pickle.dumps(_Reduce(), protocol=2))


def test_truncated_storage_data_is_refused(weights_file: Path) -> None:
    data = weights_file.read_bytes()
    with pytest.raises(ModelError, match="truncated"):
        load_state_dict(data[:-100])


def test_trailing_bytes_are_refused(weights_file: Path) -> None:
    with pytest.raises(ModelError, match="4 trailing bytes"):
        load_state_dict(weights_file.read_bytes() + b"\0\0\0\0")


def test_not_the_format_is_refused() -> None:
    with pytest.raises(ModelError, match="magic number"):
        load_state_dict(pickle.dumps(12345) + b"rest")
