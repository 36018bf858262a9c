"""LoadGen settings: our user.conf overrides, the embedded mlperf.conf, and real LoadGen parsing."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from pathlib import Path

import mlperf_loadgen as lg
import pytest

from harness.config import (
    ModelConfig,
    ProfileName,
    QuickConfig,
    Scenario,
    ScenarioName,
    ServerConfig,
)
from harness.errors import ConfigError, RunError
from harness.loadgen import timed
from harness.loadgen.conf import (
    OFFLINE_SLACK,
    conf_value,
    official_mlperf_conf,
    render_user_conf,
    server_latency_bound_ns,
    sha256_text,
    user_conf_overrides,
    whole_batches_qps,
)
from harness.loadgen.timed import load_settings, performance_sample_count
from harness.records.request import Expectation

OFFICIAL_QSL_RNG_SEED = 2085463073848966840
HEADER = "# written by beyond-tops; applied on top of LoadGen's official mlperf.conf"
QUICK = QuickConfig(min_duration_ms=2000, min_query_count=100, performance_sample_count=128)
# 2.5 ms measured latency and 2000 samples/s: exactly representable expectations.
EXPECTED = Expectation(latency_ns=2_500_000.0, samples_per_second=2000.0)


def _scenario(kind: ScenarioName, *, batch_size: int = 1) -> Scenario:
    return Scenario(
        name=f"t-{kind}",
        scenario=kind,
        model=ModelConfig(zoo="resnet50", loadgen_name="resnet50"),
        batch_size=batch_size,
        quick=QUICK,
    )


def _plan(
    tmp_path: Path,
    kind: ScenarioName,
    profile: ProfileName,
    *,
    model_key: str = "resnet50",
    total: int = 1024,
    mode: str = "performance",
) -> timed.TestPlan:
    """Write the official mlperf.conf and our user.conf into tmp_path; return the plan."""
    mlperf_conf = tmp_path / "mlperf.conf"
    mlperf_conf.write_text(official_mlperf_conf(), encoding="utf-8")
    overrides = user_conf_overrides(
        _scenario(kind, batch_size=8 if kind == "Offline" else 1), profile, EXPECTED
    )
    user_conf = tmp_path / f"user-{kind}-{profile}.conf"
    user_conf.write_text(render_user_conf(model_key, kind, overrides), encoding="utf-8")
    return timed.TestPlan(
        scenario=kind,
        mode=mode,
        model_key=model_key,
        mlperf_conf=mlperf_conf,
        user_conf=user_conf,
        out_dir=tmp_path,
        total_sample_count=total,
    )


# --- user_conf_overrides ----------------------------------------------------------------------


def test_singlestream_submission_sets_only_target_latency() -> None:
    overrides = user_conf_overrides(_scenario("SingleStream"), "submission", EXPECTED)
    # half of the 2.5 ms measured latency, in ms
    assert overrides == {"target_latency": 1.25}


def test_singlestream_quick_adds_quick_limits_in_order() -> None:
    overrides = user_conf_overrides(_scenario("SingleStream"), "quick", EXPECTED)
    assert list(overrides.items()) == [
        ("target_latency", 1.25),
        ("min_duration", 2000),
        ("min_query_count", 100),
        ("performance_sample_count_override", 128),
    ]


def test_offline_submission_sets_only_target_qps() -> None:
    overrides = user_conf_overrides(_scenario("Offline", batch_size=8), "submission", EXPECTED)
    # 25 % above the measured 2000 samples/s
    assert overrides == {"target_qps": 2500.0}


def test_offline_quick_adds_quick_limits_in_order() -> None:
    overrides = user_conf_overrides(_scenario("Offline", batch_size=8), "quick", EXPECTED)
    # 1.1 x 2 s x 2500 = 5500 samples, 687.5 batches: raised to 688 batches (5504.5 / 2.2 s)
    assert list(overrides.items()) == [
        ("target_qps", 2502.045455),
        ("min_duration", 2000),
        ("min_query_count", 104),
        ("performance_sample_count_override", 128),
    ]


def test_expectations_are_clamped_and_rounded() -> None:
    tiny = Expectation(latency_ns=10.0, samples_per_second=0.0)
    assert user_conf_overrides(_scenario("SingleStream"), "submission", tiny) == {
        "target_latency": 0.001  # never below 1 us
    }
    assert user_conf_overrides(_scenario("Offline"), "submission", tiny) == {"target_qps": 0.1}
    odd = Expectation(latency_ns=353_000.0, samples_per_second=1234.5678)
    assert user_conf_overrides(_scenario("SingleStream"), "submission", odd) == {
        "target_latency": 0.1765
    }
    assert user_conf_overrides(_scenario("Offline"), "submission", odd) == {"target_qps": 1543.21}


def test_offline_query_is_whole_batches_as_loadgen_sizes_it() -> None:
    """LoadGen's floor(1.1 x seconds x qps) lands on a multiple of the batch, never below."""
    for qps, batch, duration_ms in ((50.0, 8, 20_000), (4210.13, 8, 1000), (13.3, 3, 20_000)):
        raised = whole_batches_qps(qps, batch, duration_ms)
        samples = math.floor(OFFLINE_SLACK * duration_ms / 1000 * raised)
        before = math.floor(OFFLINE_SLACK * duration_ms / 1000 * qps)
        assert samples % batch == 0 and 0 < samples - before < batch
        assert raised - qps < batch / (OFFLINE_SLACK * duration_ms / 1000)
    assert whole_batches_qps(2500.0, 8, 600_000) == 2500.0  # already whole: unchanged
    assert whole_batches_qps(13.3, 1, 20_000) == 13.3


# --- render_user_conf -------------------------------------------------------------------------


def test_render_user_conf_exact() -> None:
    text = render_user_conf(
        "resnet50",
        "Offline",
        {"target_qps": 2200.0, "min_duration": 2000, "performance_sample_count_override": 64},
    )
    assert text == (
        f"{HEADER}\n"
        "resnet50.Offline.target_qps = 2200.0\n"
        "resnet50.Offline.min_duration = 2000\n"
        "resnet50.Offline.performance_sample_count_override = 64\n"
    )


def test_render_user_conf_lines_are_model_scenario_key_value() -> None:
    overrides = user_conf_overrides(_scenario("SingleStream"), "quick", EXPECTED)
    lines = render_user_conf("tiny", "SingleStream", overrides).splitlines()
    assert lines[0] == HEADER
    body = lines[1:]
    assert len(body) == len(overrides)
    for line, (key, value) in zip(body, overrides.items(), strict=True):
        assert line == f"tiny.SingleStream.{key} = {value}"
        assert re.fullmatch(r"tiny\.SingleStream\.[a-z_]+ = [0-9.]+", line)


def test_render_user_conf_without_overrides_is_only_the_header() -> None:
    assert render_user_conf("tiny", "Offline", {}) == f"{HEADER}\n"


# --- the embedded mlperf.conf -----------------------------------------------------------------


def test_official_mlperf_conf_text() -> None:
    text = official_mlperf_conf()
    assert text.startswith("# The format of this config file is 'key = value'.")
    lines = text.splitlines()
    assert "*.SingleStream.min_duration = 600000" in lines
    assert "resnet50.Offline.min_query_count = 24576" in lines
    assert "resnet50.*.performance_sample_count_override = 1024" in lines
    assert f"*.*.qsl_rng_seed = {OFFICIAL_QSL_RNG_SEED}" in lines
    assert "\0" not in text
    for line in lines:
        if line.strip() and not line.startswith("#"):
            assert re.fullmatch(r"\S+ = \S+", line), line
    assert official_mlperf_conf() == text


def test_sha256_text() -> None:
    assert sha256_text("abc\n") == hashlib.sha256(b"abc\n").hexdigest()
    assert sha256_text("é") == hashlib.sha256("é".encode()).hexdigest()


def test_official_mlperf_conf_missing_from_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "mlperf_loadgen.so"
    fake.write_bytes(b"\x7fELF no configuration in here\0")
    monkeypatch.setattr(lg, "__file__", str(fake))
    with pytest.raises(RunError, match=re.escape(f"{fake}: no embedded mlperf.conf found")) as info:
        official_mlperf_conf()
    assert info.value.exit_code == 5


# --- real LoadGen parsing ---------------------------------------------------------------------


def test_submission_settings_are_official_on_every_call(tmp_path: Path) -> None:
    """LoadGen applies its embedded mlperf.conf only on the first FromConfig call per process.

    The harness passes the extracted file explicitly, so every run gets the official values.
    """
    plan = _plan(tmp_path, "Offline", "submission")
    for _ in range(2):
        settings = load_settings(plan)
        assert settings.performance_sample_count_override == 1024
        assert settings.min_query_count == 24576
        assert settings.qsl_rng_seed == OFFICIAL_QSL_RNG_SEED
        assert settings.min_duration_ms == 600000
        assert settings.offline_expected_qps == pytest.approx(2500.0)
        assert settings.scenario == lg.TestScenario.Offline
        assert settings.mode == lg.TestMode.PerformanceOnly


def test_quick_overrides_take_effect_offline(tmp_path: Path) -> None:
    settings = load_settings(_plan(tmp_path, "Offline", "quick"))
    assert settings.min_duration_ms == 2000
    assert settings.min_query_count == 104  # 100, raised to whole batches of 8
    assert settings.performance_sample_count_override == 128
    assert settings.offline_expected_qps == pytest.approx(2502.045455)
    assert settings.qsl_rng_seed == OFFICIAL_QSL_RNG_SEED


def test_quick_overrides_take_effect_singlestream(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "SingleStream", "quick", model_key="tiny")
    for _ in range(2):
        settings = load_settings(plan)
        assert settings.min_duration_ms == 2000
        assert settings.min_query_count == 100
        assert settings.performance_sample_count_override == 128
        assert settings.single_stream_expected_latency_ns == pytest.approx(1_250_000)
        assert settings.single_stream_target_latency_percentile == pytest.approx(0.9)
        assert settings.qsl_rng_seed == OFFICIAL_QSL_RNG_SEED
        assert settings.scenario == lg.TestScenario.SingleStream


def test_singlestream_submission_uses_official_duration(tmp_path: Path) -> None:
    settings = load_settings(_plan(tmp_path, "SingleStream", "submission"))
    assert settings.min_duration_ms == 600000
    assert settings.performance_sample_count_override == 1024
    assert settings.single_stream_expected_latency_ns == pytest.approx(1_250_000)


def test_accuracy_mode(tmp_path: Path) -> None:
    settings = load_settings(_plan(tmp_path, "Offline", "quick", mode="accuracy"))
    assert settings.mode == lg.TestMode.AccuracyOnly


def test_unreadable_user_conf_is_a_run_error(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "Offline", "quick")
    plan.user_conf.unlink()
    with pytest.raises(RunError, match=re.escape(f"{plan.user_conf}: LoadGen could not read it")):
        load_settings(plan)


# --- performance_sample_count -----------------------------------------------------------------


def test_performance_sample_count_uses_loadgen_override(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "Offline", "submission", total=5000)
    assert performance_sample_count(load_settings(plan), plan) == 1024
    quick = _plan(tmp_path, "Offline", "quick", total=5000)
    assert performance_sample_count(load_settings(quick), quick) == 128


def test_performance_sample_count_defaults_to_all_samples(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "Offline", "submission", total=300)
    assert performance_sample_count(lg.TestSettings(), plan) == 300


def test_performance_sample_count_equal_to_data_is_fine(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "Offline", "submission", total=1024)
    assert performance_sample_count(load_settings(plan), plan) == 1024


def test_performance_sample_count_larger_than_data_is_a_config_error(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "Offline", "submission", total=512)
    settings = load_settings(plan)
    with pytest.raises(ConfigError) as info:
        performance_sample_count(settings, plan)
    assert str(info.value) == (
        "data.total_sample_count: 512 is smaller than the performance_sample_count 1024 "
        "LoadGen uses for 'resnet50'; raise it"
    )
    assert info.value.exit_code == 2


# --- MultiStream and Server -------------------------------------------------------------------


def test_conf_value_takes_the_most_specific_line_as_loadgen_does() -> None:
    text = "\n".join(
        [
            "*.*.x = 1",
            "*.Server.x = 2",
            "resnet50.*.x = 3",
            "resnet50.Server.x = 4",
            "*.Server.x = 5  ",  # a later wildcard does not beat a specific line
            "# resnet50.Server.x = 6",
        ]
    )
    assert conf_value(text, "resnet50", "Server", "x") == "4"
    assert conf_value(text, "resnet50", "Offline", "x") == "3"
    assert conf_value(text, "bert", "Server", "x") == "5"
    assert conf_value(text, "bert", "Offline", "x") == "1"
    assert conf_value(text, "bert", "Offline", "y") is None


def test_server_latency_bounds_come_from_mlperf_conf_or_the_scenario() -> None:
    resnet = _scenario("Server", batch_size=4)
    assert server_latency_bound_ns(resnet, "resnet50") == 15_000_000  # mlperf.conf
    assert server_latency_bound_ns(resnet, "tiny") == 10_000_000  # *.Server.target_latency
    loose = dataclasses.replace(resnet, server=ServerConfig(latency_bound_ms=250.5))
    assert server_latency_bound_ns(loose, "resnet50") == 250_500_000


def test_server_overrides_set_the_arrival_rate_and_the_bound_only_when_given() -> None:
    scenario = dataclasses.replace(
        _scenario("Server", batch_size=4),
        server=ServerConfig(target_qps=123.5, latency_bound_ms=40.0),
    )
    overrides = user_conf_overrides(scenario, "submission", EXPECTED)
    assert overrides == {"target_latency": 40.0, "target_qps": 123.5}
    searching = _scenario("Server", batch_size=4)  # no rate: the search starts at the expected
    assert user_conf_overrides(searching, "submission", EXPECTED) == {"target_qps": 2000.0}


def test_multistream_sets_its_expected_query_latency_and_keeps_8_samples() -> None:
    overrides = user_conf_overrides(_scenario("MultiStream", batch_size=8), "submission", EXPECTED)
    assert overrides == {"target_latency": 1.25}  # half the measured 2.5 ms, as SingleStream
    four = _scenario("MultiStream", batch_size=4)
    assert user_conf_overrides(four, "quick", EXPECTED)["samples_per_query"] == 4
    with pytest.raises(ConfigError, match="a submission may not change it"):
        user_conf_overrides(four, "submission", EXPECTED)


@pytest.mark.parametrize("kind", ["MultiStream", "Server"])
def test_real_loadgen_reads_the_new_scenarios_settings(tmp_path: Path, kind: ScenarioName) -> None:
    scenario = _scenario(kind, batch_size=8)
    if kind == "Server":
        scenario = dataclasses.replace(scenario, server=ServerConfig(target_qps=77.0))
    mlperf_conf = tmp_path / "mlperf.conf"
    mlperf_conf.write_text(official_mlperf_conf(), encoding="utf-8")
    user_conf = tmp_path / "user.conf"
    overrides = user_conf_overrides(scenario, "submission", EXPECTED)
    user_conf.write_text(render_user_conf("resnet50", kind, overrides), encoding="utf-8")
    plan = timed.TestPlan(
        scenario=kind,
        mode="performance",
        model_key="resnet50",
        mlperf_conf=mlperf_conf,
        user_conf=user_conf,
        out_dir=tmp_path,
        total_sample_count=1024,
    )
    settings = load_settings(plan)
    if kind == "Server":
        assert settings.server_target_qps == 77.0
        assert settings.server_target_latency_ns == 15_000_000
        assert settings.scenario == lg.TestScenario.Server
    else:
        assert settings.multi_stream_samples_per_query == 8
        assert settings.multi_stream_expected_latency_ns == 1_250_000
        assert settings.scenario == lg.TestScenario.MultiStream


def test_a_published_results_pins_reach_loadgen(tmp_path: Path) -> None:
    """Seeds are set on LoadGen's settings (a user.conf's are ignored); conf keys go last."""
    from harness.loadgen.plan import write_test_confs
    from harness.records.request import LoadGenPins

    pins = LoadGenPins(
        conf=(("min_duration", 1500), ("performance_sample_count_override", 16)),
        seeds=(("qsl_rng_seed", 123), ("schedule_rng_seed", 16159082839903944936)),
    )
    plan = write_test_confs(
        tmp_path,
        scenario=_scenario("Offline", batch_size=8),
        profile="quick",
        model_key="resnet50",
        expected=EXPECTED,
        total_samples=1024,
        mode="performance",
        pins=pins,
    )
    settings = load_settings(plan)
    assert settings.qsl_rng_seed == 123 and settings.schedule_rng_seed == 16159082839903944936
    assert settings.sample_index_rng_seed != 123  # not pinned: mlperf.conf's
    assert settings.min_duration_ms == 1500 and settings.performance_sample_count_override == 16
    bad = dataclasses.replace(plan, seeds=(("min_duration", 1),))
    with pytest.raises(ConfigError, match="'min_duration' is not one of LoadGen's seeds"):
        load_settings(bad)
