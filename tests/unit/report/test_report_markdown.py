"""The Markdown and HTML reports, against a golden file rendered from checked-in groups."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import shutil
from pathlib import Path

from golden import REPORTS, check_golden

from harness.analysis.peaks import Peak
from harness.analysis.utilization import utilization
from harness.records.group import Group
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.results.groups import load_group

TINY = REPORTS.parent / "results" / "tiny-singlestream"
PNG = b"\x89PNG\r\n\x1a\n"
IMAGES = [
    "1-trials-epyc-latency-cdf.png",
    "1-trials-epyc-utilization.png",
    "2-sweep-h100-throughput.png",
    "2-sweep-h100-telemetry-bs-16-trial-1.png",
    "2-sweep-h100-utilization.png",
]


def _groups() -> list[Group]:
    return [load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "sweep-h100")]


def test_markdown_report_matches_the_golden_file(tmp_path: Path) -> None:
    # Raw-file links are relative to the page, so the groups sit beside it wherever the
    # checkout lives: the golden file must not depend on the checkout's path.
    for name in ("trials-epyc", "sweep-h100"):
        shutil.copytree(REPORTS / name, tmp_path / "groups" / name)
    groups = [load_group(tmp_path / "groups" / n) for n in ("trials-epyc", "sweep-h100")]
    text = render_markdown(groups, images_dir=tmp_path / "report" / "images")
    assert "](../groups/trials-epyc/trial-1/result.json)" in text
    check_golden("expected_report.md", text)


def test_every_plot_is_written_and_linked(tmp_path: Path) -> None:
    text = render_markdown(_groups(), images_dir=tmp_path / "images")
    assert re.findall(r"!\[[^\]]*\]\(images/([^)]+)\)", text) == IMAGES
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == sorted(IMAGES)
    assert all((tmp_path / "images" / name).read_bytes().startswith(PNG) for name in IMAGES)


def test_rendering_twice_gives_the_same_text_and_images(tmp_path: Path) -> None:
    first = render_markdown(_groups(), images_dir=tmp_path / "a" / "images")
    second = render_markdown(_groups(), images_dir=tmp_path / "b" / "images")
    assert first == second
    for name in IMAGES:
        a, b = (tmp_path / d / "images" / name for d in ("a", "b"))
        assert a.read_bytes() == b.read_bytes(), name


def test_a_single_run_without_telemetry(tmp_path: Path) -> None:
    text = render_markdown([load_group(TINY)], images_dir=tmp_path / "images")
    assert "## tiny fp32 · SingleStream · AMD EPYC (2 CPUs)" in text
    assert "One run of tiny-ss-test: SingleStream" in text
    assert "tiny-singlestream: no telemetry.csv in the run directory." in text
    assert "Power not measured: rapl: no RAPL" in text
    result = load_group(TINY).results[0]
    u = result.utilization
    assert u.achieved_tflops and u.peak_tflops and u.fraction_of_peak
    # The fixture predates the probe (schema 2): no attainable rate, no basis; said as n/a.
    row = (
        f"| tiny-singlestream | {u.achieved_tflops:.3f} | {u.peak_tflops:.3f} | "
        f"{u.fraction_of_peak * 100:.2f} | n/a | n/a | {u.peak_name} | n/a |"
    )
    assert row in text
    assert all(f"- [tiny-singlestream] {w}" in text for w in result.warnings)


def test_utilization_that_could_not_be_computed_says_why(tmp_path: Path) -> None:
    group = load_group(TINY)
    block = utilization(samples_per_second=788.0, flops_per_sample=None, peak=None)
    unknown = dataclasses.replace(group.results[0], utilization=block)
    runs = dataclasses.replace(group.runs, results=(unknown,))
    text = render_markdown([dataclasses.replace(group, runs=runs)], images_dir=tmp_path)
    assert "Notes: flops_per_sample unknown; macs_per_sample unknown; no peak" in text
    assert "| tiny-singlestream | n/a | n/a | n/a | n/a | n/a | n/a | n/a |" in text
    assert "utilization.png" not in text


def test_a_guessed_peak_is_marked_and_the_attainable_rate_shown(tmp_path: Path) -> None:
    group = load_group(TINY)
    guess = Peak(name="VM CPU", precision="fp32", tflops=0.2, source="derived", basis="guess")
    block = utilization(
        samples_per_second=20.0,
        flops_per_sample=7.5e9,
        macs_per_sample=3.75e9,
        peak=guess,
        attainable_tflops=0.25,
        attainable_method="onnxruntime GEMM probe: 2 x MatMul 1024x1024 fp32",
    )
    guessed = dataclasses.replace(group.results[0], utilization=block)
    runs = dataclasses.replace(group.runs, results=(guessed,))
    text = render_markdown([dataclasses.replace(group, runs=runs)], images_dir=tmp_path)
    assert (
        "| tiny-singlestream | 0.150 | 0.200 | 75.00 (guess) | 0.250 | 60.00 | VM CPU | guess |"
        in text
    )
    assert "Attainable rate: onnxruntime GEMM probe: 2 x MatMul 1024x1024 fp32." in text
    assert "Notes: the peak is a guess" in text


def test_an_out_of_memory_sweep_reports_its_limit(tmp_path: Path) -> None:
    shutil.copytree(REPORTS / "sweep-h100", tmp_path / "sweep")
    doc = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    doc.update(stopped="out_of_memory", limit={"batch_size": 32, "error": "CUDA out of memory"})
    (tmp_path / "sweep" / "sweep.json").write_text(json.dumps(doc))
    text = render_markdown([load_group(tmp_path / "sweep")], images_dir=tmp_path / "images")
    assert "Stopped: out of memory at batch 32: CUDA out of memory." in text
    assert "- [sweep] stopped at batch 32: out of memory (CUDA out of memory)" in text


def test_a_sweep_that_measured_nothing(tmp_path: Path) -> None:
    (tmp_path / "sweep").mkdir()
    doc = {
        "schema_version": 1,
        "kind": "sweep",
        "scenario_name": "tiny-offline-sweep",
        "profile": "quick",
        "points": [],
        "saturation_batch": None,
        "best_batch": None,
        "stopped": "out_of_memory",
        "limit": {"batch_size": 1, "error": "CUDA out of memory"},
    }
    (tmp_path / "sweep" / "sweep.json").write_text(json.dumps(doc))
    text = render_markdown([load_group(tmp_path / "sweep")], images_dir=tmp_path / "images")
    assert "Sweep in sweep: no point was measured." in text
    assert "No saturation point. Stopped: out of memory at batch 1: CUDA out of memory." in text
    assert "![" not in text


def test_html_page_is_self_contained() -> None:
    page = render_html(_groups())
    images = re.findall(r'<img [^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == len(IMAGES)
    assert all(base64.b64decode(data).startswith(PNG) for data in images)
    assert page.count('<h3 id="machine-') == 2
    assert "<style>" in page and "<script" not in page and "<link" not in page
    assert not re.search(r"(src|href)=\"(?!data:|#|file:///)", page)
    assert "Saturation at batch 4; best throughput at batch 16." in page
    assert "<li>[trials] p90 latency: spread too large to trust" in page
