"""The report page a buyer reads first: summary table, names, figures, telemetry and links."""

from __future__ import annotations

import os
import re
import shutil
import struct
from pathlib import Path

import pytest

from harness.records.group import Group
from harness.report import plots
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.results.groups import load_group

REPO = Path(__file__).resolve().parents[3]
REPORTS = REPO / "tests" / "fixtures" / "reports"
TINY = REPO / "tests" / "fixtures" / "results" / "tiny-singlestream"
GOLDEN = REPO / "tests" / "fixtures" / "golden" / "report"
REGEN = "BEYOND_TOPS_REGEN_GOLDEN"
EPYC = "tiny fp32 · SingleStream · AMD EPYC (2 CPUs)"
H100 = "tiny fp32 · Offline · NVIDIA H100 80GB HBM3"
XEON = "tiny fp32 · SingleStream · Intel Xeon Platinum 8480+ (4 CPUs)"


def _groups(*names: str) -> list[Group]:
    return [load_group(REPORTS / name) for name in names]


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get(REGEN) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert text == path.read_text(encoding="utf-8"), f"{path} differs; rerun with {REGEN}=1"


def _summary_table(markdown: str) -> str:
    """The lines of the first table of the page, from its header to the blank line after it."""
    found = re.search(r"^\| # \| device \|.*?(?=\n\n)", markdown, flags=re.M | re.S)
    assert found, "no summary table with '#' and 'device' columns"
    return found.group(0) + "\n"


def _png_size(png: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", png[16:24])
    return int(width), int(height)


# Problem 2: the first screen says what was measured.


def test_the_summary_table_matches_the_golden_file(tmp_path: Path) -> None:
    groups = _groups("trials-epyc", "sweep-h100", "trials-xeon")
    text = render_markdown(groups, images_dir=tmp_path / "images")
    _check_golden("summary.md", _summary_table(text))


def test_the_summary_table_comes_first_with_a_row_per_configuration(tmp_path: Path) -> None:
    text = render_markdown(_groups("trials-epyc", "sweep-h100"), images_dir=tmp_path / "i")
    table = _summary_table(text)
    before = text[: text.index(table)]
    assert "|" not in before and "##" not in before  # title and one line of context only
    rows = table.splitlines()[2:]
    assert len(rows) == 2
    for row, parts in zip(rows, (EPYC, H100), strict=True):
        assert all(f"| {part} |" in row for part in parts.split(" · ")), row
    assert "| tiny fp32 |" in rows[0] and "| early-stopping p90 latency (ms) | 2.461 |" in rows[0]
    assert "| throughput (samples/s) | 7,150.0 |" in rows[1]
    assert "| 3/3 VALID, quick profile |" in rows[0] and "| 8.2 % ⚠ | 7 |" in rows[0]
    assert "| gpu0 21.53 samples/s/W |" in rows[1]


def test_the_title_says_what_was_measured_when_and_where(tmp_path: Path) -> None:
    text = render_markdown(_groups("trials-epyc", "sweep-h100"), images_dir=tmp_path / "i")
    title = text.splitlines()[0]
    assert title.startswith("# ") and "beyond-tops report" not in title
    assert "tiny fp32" in title and "SingleStream" in title and "Offline" in title
    assert "AMD EPYC (2 CPUs)" in title and "NVIDIA H100 80GB HBM3" in title
    assert "2026-11-30" in text.split("\n\n")[1]  # the date, under the title
    assert "b288c2bca45d0ed8" in text.split("\n\n")[1]  # and the machine it ran on
    page = render_html(_groups("trials-epyc"))
    assert re.search(r"<title>[^<]*tiny fp32 · SingleStream[^<]*</title>", page)


def test_sections_are_named_by_configuration_not_by_folder(tmp_path: Path) -> None:
    text = render_markdown(_groups("trials-epyc", "sweep-h100"), images_dir=tmp_path / "i")
    headings = re.findall(r"^## (.*)$", text, flags=re.M)
    assert EPYC in headings and H100 in headings
    assert "trials-epyc" not in headings and "sweep-h100" not in headings


def test_singlestream_leads_with_the_early_stopping_p90(tmp_path: Path) -> None:
    text = render_markdown(_groups("trials-epyc"), images_dir=tmp_path / "i")
    row = _summary_table(text).splitlines()[2]
    # MLPerf's SingleStream metric: the early-stopping p90 estimate, the median over 3 trials.
    assert "| early-stopping p90 latency (ms) | 2.461 |" in row
    assert "samples/s" not in row
    results = text[text.index("### Results") :]
    first_metric = results.split("\n")[4]
    assert first_metric.startswith("| early-stopping p90 latency (ms) | 2.461 |")


# Problem 7: figures and tables.


def test_the_peak_is_one_line_and_the_legend_sits_outside_the_bars() -> None:
    bars = [
        plots.UtilizationBar(label=f"trial-{i}", achieved_tflops=0.06, peak_tflops=0.166)
        for i in (1, 2, 3)
    ]
    fig = plots.utilization_figure(bars)
    ax = fig.axes[0]
    assert ax.get_title() and "TFLOP/s" in ax.get_xlabel()
    assert len(ax.patches) == 3  # achieved only: the peak is not a bar per trial
    peaks = [line for line in ax.get_lines() if "peak" in str(line.get_label())]
    assert len(peaks) == 1
    fig.canvas.draw()  # type: ignore[no-untyped-call]
    legend = ax.get_legend()
    assert legend is not None
    box = legend.get_window_extent()
    data = [p.get_window_extent() for p in ax.patches]
    assert not any(box.overlaps(b) for b in data)


def test_bar_labels_stay_inside_the_frame_and_the_attainable_rate_is_drawn() -> None:
    # near the peak (84 %), just over it (a run to be judged implausible), and a short bar
    bars = [
        plots.UtilizationBar(
            label="near", achieved_tflops=0.132, peak_tflops=0.157, attainable_tflops=0.174
        ),
        plots.UtilizationBar(
            label="over", achieved_tflops=0.5, peak_tflops=0.157, attainable_tflops=0.174
        ),
        plots.UtilizationBar(
            label="short", achieved_tflops=0.01, peak_tflops=0.157, attainable_tflops=0.174
        ),
    ]
    fig = plots.utilization_figure(bars)
    ax = fig.axes[0]
    fig.canvas.draw()  # type: ignore[no-untyped-call]
    frame = ax.get_window_extent()
    labels = [t for t in ax.texts if "of peak" in t.get_text()]
    assert len(labels) == 3
    for text in labels:
        box = text.get_window_extent()
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, text.get_text()
    lines = [str(line.get_label()) for line in ax.get_lines()]
    assert "attainable 0.174 TFLOP/s" in lines and "peak 0.157 TFLOP/s" in lines
    assert ax.get_xlim()[1] > 0.5  # the bar over the peak is drawn whole


def test_every_figure_has_a_title_and_is_rendered_for_hidpi(tmp_path: Path) -> None:
    group = load_group(REPORTS / "sweep-h100")
    assert group.sweep is not None
    figures = {
        "throughput": plots.throughput_figure(group.sweep),
        "cdf": plots.latency_cdf_figure([("a", load_group(TINY).results[0].latency_ns)]),
    }
    for name, fig in figures.items():
        assert all(ax.get_title() for ax in fig.axes), name
    png = plots.throughput_png(group.sweep)
    assert _png_size(png)[0] >= 1280  # 2x a 640 px wide figure


def test_html_images_are_drawn_at_half_their_pixel_size() -> None:
    page = render_html(_groups("sweep-h100"))
    sizes = re.findall(r'<img width="(\d+)" height="(\d+)"', page)
    assert sizes and all(int(w) <= 700 for w, _ in sizes)


def test_the_fingerprint_is_a_readable_table_shown_once_per_machine(tmp_path: Path) -> None:
    shutil.copytree(REPORTS / "trials-epyc", tmp_path / "again")
    groups = [*_groups("trials-epyc", "sweep-h100"), load_group(tmp_path / "again")]
    text = render_markdown(groups, images_dir=tmp_path / "i")
    assert text.count("### Machine b288c2bca45d0ed8") == 1
    assert text.count("### Machine 5bc9fc6bde549726") == 1
    assert "null" not in text and "total_bytes" not in text
    assert "| memory | 23.5 GiB total, 23.1 GiB available; no swap |" in text
    assert "2,596 MHz" in text and "79.6 GiB" in text and "1,980 MHz" in text
    assert "L1d 32 KiB, L1i 32 KiB, L2 1 MiB, L3 32 MiB" in text
    assert "| not read | 5 fields: no cpufreq driver (VM?) (cpu.max_mhz" in text


def test_backticks_become_code_in_html() -> None:
    page = render_html(_groups("trials-epyc"))
    assert "<code>--profile submission</code>" in page
    assert "`" not in re.sub(r"<style>.*?</style>", "", page, flags=re.S)


def test_numbers_are_right_aligned(tmp_path: Path) -> None:
    text = render_markdown(_groups("trials-epyc"), images_dir=tmp_path / "i")
    results = text[text.index("### Results") :]
    assert results.split("\n")[3] == "| --- | ---: | ---: | ---: | --- |"
    page = render_html(_groups("trials-epyc"))
    assert '<td class="num">2.461</td>' in page
    assert "td.num" in page and "text-align: right" in page


# Problem 8: a header-only telemetry.csv.


def test_a_header_only_telemetry_csv_says_what_is_there_and_why(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(TINY, run)
    (run / "telemetry.csv").write_text(
        "# beyond-tops telemetry, format 1; sampled every 0.1 s (10 Hz)\n"
        '# window: {"start_ns": 0, "end_ns": 1000000000, "interval_s": 0.1}\n'
        '# unavailable: {"source": "rapl", "reason": "no RAPL: /sys/class/powercap absent"}\n'
        "t_ns,t_s,source,power_w,temp_c,sm_clock_mhz,mem_clock_mhz,util_pct,throttle\n"
    )
    text = render_markdown([load_group(run)], images_dir=tmp_path / "i")
    assert "No telemetry.csv" not in text
    assert (
        "run: telemetry.csv is there but holds no samples, only its header: "
        "rapl: no RAPL: /sys/class/powercap absent." in text
    )


def test_an_absent_telemetry_csv_is_said_to_be_absent(tmp_path: Path) -> None:
    text = render_markdown([load_group(TINY)], images_dir=tmp_path / "i")
    assert "tiny-singlestream: no telemetry.csv in the run directory." in text


# Problem 9: navigation.


def _with_logs(tmp_path: Path) -> list[Group]:
    shutil.copytree(REPORTS / "trials-epyc", tmp_path / "runs" / "trials-epyc")
    for trial in ("trial-1", "trial-2", "trial-3"):
        log = tmp_path / "runs" / "trials-epyc" / trial / "mlperf_log_summary.txt"
        log.write_text("Result is : VALID\n")
    return [load_group(tmp_path / "runs" / "trials-epyc"), *_groups("sweep-h100")]


def test_markdown_has_contents_anchors_and_relative_links_to_the_logs(tmp_path: Path) -> None:
    groups = _with_logs(tmp_path)
    text = render_markdown(groups, images_dir=tmp_path / "report" / "images")
    toc = text[text.index("## Contents") :].split("\n\n")[1]
    targets = re.findall(r"\]\(#([a-z0-9-]+)\)", toc)
    assert len(targets) >= 3  # two configurations, the machines
    for target in targets:
        assert f'<a id="{target}"></a>' in text
    links = re.findall(r"\]\(([^)#]+\.(?:txt|json))\)", text)
    assert "../runs/trials-epyc/trial-1/mlperf_log_summary.txt" in links
    assert "../runs/trials-epyc/trial-1/result.json" in links
    assert all((tmp_path / "report" / link).resolve().is_file() for link in links)


def test_html_has_contents_anchors_and_relative_links(tmp_path: Path) -> None:
    groups = _with_logs(tmp_path)
    page = render_html(groups, out_dir=tmp_path / "report")
    ids = set(re.findall(r'id="([^"]+)"', page))
    anchors = re.findall(r'href="#([^"]+)"', page)
    assert anchors and set(anchors) <= ids
    files = re.findall(r'href="(?!#)([^"]+)"', page)
    assert "../runs/trials-epyc/trial-2/mlperf_log_summary.txt" in files
    assert all(not f.startswith(("/", "file:", "http")) for f in files)
    assert all((tmp_path / "report" / f).resolve().is_file() for f in files)


@pytest.mark.parametrize("names", [("trials-epyc",), ("trials-epyc", "sweep-h100")])
def test_html_stays_self_contained(names: tuple[str, ...]) -> None:
    page = render_html(_groups(*names))
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"(src|href)=\"(https?:|//)", page)
    assert "max-width" in page and "overflow-x: auto" in page


def test_a_long_run_label_never_squeezes_the_plot_to_nothing() -> None:
    """A bundle's label ran the CDF's legend across the figure (matplotlib: axes collapsed)."""
    import warnings

    result = load_group(REPORTS / "trials-epyc").results[0]
    label = "[bundle 2026-12-01-resnet50-open-2core-epyc-kvm-SingleStream.bundle.tar]/trial-1"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        png = plots.latency_cdf_png([(label, result.latency_ns)])
    assert png.startswith(b"\x89PNG")
