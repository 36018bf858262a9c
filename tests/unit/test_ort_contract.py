"""The onnxruntime fake against the real CPU build: the same assertions on both.

A GPU build is not here, so the real side uses the CPU build's AzureExecutionProvider as the
"accelerator": a provider that takes no node of an ordinary model, so every node falls to the
CPU, which is exactly the case the harness must judge by placement and not by provider list.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnxruntime as ort
import pytest
from ort_fakes import CPU, FakeSession

from harness.config import RuntimeConfig
from harness.errors import DeviceError
from harness.models.registry import zoo_model_path
from harness.runtime import session as session_mod
from harness.runtime.session import SessionRequest, create_session, placement_warnings
from harness.runtime.targets import HardwareTarget, ProviderSpec

AZURE = "AzureExecutionProvider"
# An accelerator target the CPU build can really create sessions for.
AZURE_TARGET = HardwareTarget(
    name="azure-test",
    image="beyond-tops/none",
    ort_package="onnxruntime",
    providers=(ProviderSpec(name=AZURE),),
    device_type="azure",
    telemetry=(),
    install_hint="the CPU build of onnxruntime ships it",
)
FALLBACK_DISABLED = "fallback to CPU EP has been explicitly disabled"


def real_session(chain: list[Any], options: Any = None) -> Any:
    return ort.InferenceSession(
        str(zoo_model_path("tiny")), sess_options=options, providers=chain, enable_fallback=0
    )


def fake_session(chain: list[Any], options: Any = None) -> Any:
    FakeSession.fail_with, FakeSession.uses = None, None
    return FakeSession(str(zoo_model_path("tiny")), options, chain, enable_fallback=0)


BOTH: list[tuple[str, Callable[..., Any], str]] = [
    ("real", real_session, AZURE),
    ("fake", fake_session, "CUDAExecutionProvider"),
]


@pytest.mark.parametrize(("kind", "make", "provider"), BOTH, ids=[b[0] for b in BOTH])
def test_the_cpu_provider_is_always_appended(
    kind: str, make: Callable[..., Any], provider: str
) -> None:
    session = make([(provider, {})])
    assert session.get_providers() == [provider, CPU]


@pytest.mark.parametrize(("kind", "make", "provider"), BOTH, ids=[b[0] for b in BOTH])
def test_provider_options_name_every_provider_with_string_values(
    kind: str, make: Callable[..., Any], provider: str
) -> None:
    options = make([(provider, {})]).get_provider_options()
    assert set(options) == {provider, CPU}
    assert all(
        isinstance(k, str) and isinstance(v, str) for o in options.values() for k, v in o.items()
    )


@pytest.mark.parametrize(("kind", "make", "provider"), BOTH, ids=[b[0] for b in BOTH])
def test_the_fake_is_called_as_the_real_one_is(
    kind: str, make: Callable[..., Any], provider: str
) -> None:
    # The call the harness makes binds to both signatures.
    for cls in (ort.InferenceSession, FakeSession):
        inspect.signature(cls).bind("m.onnx", sess_options=None, providers=[], enable_fallback=0)
    assert make([(provider, {})]).get_inputs()[0].name == "input"


def test_the_placement_error_text_the_harness_matches_is_onnxruntimes() -> None:
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    with pytest.raises(Exception, match=FALLBACK_DISABLED) as err:
        real_session([AZURE], options)
    message = session_mod._gpu_creation_message(AZURE_TARGET, str(err.value).splitlines()[0])
    assert "runtime.allow_cpu_fallback: true" in message


def test_the_cpu_ban_and_an_explicit_cpu_provider_conflict() -> None:
    # Why the harness adds the CPU provider to a chain only when it lifts the ban.
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    with pytest.raises(Exception, match="Conflicting session configuration"):
        real_session([AZURE, CPU], options)


def azure_request(tmp_path: Path, **runtime: Any) -> SessionRequest:
    return SessionRequest(
        model_path=zoo_model_path("tiny"),
        runtime=RuntimeConfig(**runtime),
        target=AZURE_TARGET,
        dims={"batch": 1},
        cache_dir=tmp_path,
    )


def test_an_accelerator_that_takes_no_node_fails_the_real_session(tmp_path: Path) -> None:
    with pytest.raises(DeviceError, match="cannot run on AzureExecutionProvider") as err:
        create_session(azure_request(tmp_path))
    assert "runtime.allow_cpu_fallback: true" in str(err.value)


def test_allowed_fallback_on_the_real_build_records_where_nodes_ran(tmp_path: Path) -> None:
    session = create_session(azure_request(tmp_path, allow_cpu_fallback=True))
    assert session.providers == (AZURE, CPU)
    placement = session.settings["node_placement"]
    assert list(placement) == [CPU] and placement[CPU] >= 4
    (warning,) = placement_warnings(session)
    assert f"{placement[CPU]} of {placement[CPU]} nodes ran on {CPU}" in warning
