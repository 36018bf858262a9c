"""--label and the memory footprint through real tiny-model runs: result.json, show, compare,
report, site and fleet; a hostile label is refused (control characters) or escaped everywhere.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import ConfigError
from harness.records.runlabel import LABEL_GRAMMAR
from harness.results.runfile import SCHEMA_VERSION
from tests.conftest import TINY_OFFLINE, TINY_SS, harness_dir, harness_printed, write_scenario

pytestmark = pytest.mark.slow

LABEL = "baseline, 2 cores"
# Printable, so accepted: every page must show it as text, never obey it.
HOSTILE = "<script>x</script>[a](javascript:alert(1))$\\bad$;rm -rf ~&`id`"
MIB = 2**20


def _mem_total_bytes() -> int:
    found = re.search(r"^MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
    assert found is not None
    return int(found.group(1)) * 1024


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[dict[str, Path]]:
    """A labelled trials group, a hostile-labelled run, an unlabelled run, and the site."""
    root = tmp_path_factory.mktemp("label-memory")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        ss = write_scenario(root / "ss.yaml", TINY_SS)
        out = ["--out", str(root / "runs")]
        dirs = {
            "labelled": harness_dir(["run", str(ss), "--trials", "2", "--label", LABEL, *out]),
            "hostile": harness_dir(["run", str(ss), "--label", HOSTILE, *out]),
            "plain": harness_dir(["run", str(ss), *out]),
        }
        harness_printed(["site", str(root / "runs"), "--out", str(root / "site")])
        dirs["site"] = root / "site"
        dirs["root"] = root
        yield dirs


def _results(group: Path) -> list[dict[str, object]]:
    files = [group / "result.json"] if (group / "result.json").is_file() else []
    files += sorted(group.glob("trial-*/result.json"))
    return [json.loads(f.read_text()) for f in files]


def test_the_label_is_recorded_in_every_result_and_job(runs: dict[str, Path]) -> None:
    labelled = _results(runs["labelled"])
    assert len(labelled) == 2
    assert {r["schema_version"] for r in labelled} == {SCHEMA_VERSION}
    assert {r["label"] for r in labelled} == {LABEL}
    assert _results(runs["hostile"])[0]["label"] == HOSTILE
    assert _results(runs["plain"])[0]["label"] is None
    job = json.loads((runs["labelled"] / "trial-1" / "job.json").read_text())
    assert job["label"] == LABEL  # the worker was told it


def test_every_result_records_a_plausible_memory_footprint(
    runs: dict[str, Path], model_cache: Path
) -> None:
    models = [p.stat().st_size for p in model_cache.rglob("*.onnx")]
    assert models
    for result in [r for k in ("labelled", "hostile", "plain") for r in _results(runs[k])]:
        memory = result["memory"]
        assert isinstance(memory, dict)
        peak = memory["peak_rss_bytes"]
        assert isinstance(peak, int)
        # the interpreter, numpy, onnxruntime and LoadGen: far more than the tiny model file
        assert max(models) < 40 * MIB < peak < _mem_total_bytes()
        assert memory["peak_rss_scope"] in ("window", "process")
        if memory["peak_rss_scope"] == "process":
            assert "since it started" in str(memory["peak_rss_note"])
        assert memory["arena_bytes"] is None
        assert str(memory["arena_note"]).startswith("not exposed by onnxruntime ")
        assert memory["devices"] == []  # --hw cpu: no NVML or amdsmi
        assert "no accelerator telemetry" in str(memory["device_note"])


def test_show_names_the_run_and_the_group_by_label_and_prints_memory(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(runs["labelled"])]) == 0
    group = capsys.readouterr().out
    assert group.splitlines()[0].startswith(f"{LABEL} ({runs['labelled']}): trials group")
    assert re.search(
        r"^  memory: peak RSS [\d,.]+( to [\d,.]+)? MiB over 2 of 2 runs$", group, re.M
    )
    assert main(["show", str(runs["labelled"] / "trial-1")]) == 0
    run = capsys.readouterr().out
    assert run.splitlines()[0].startswith(f"{LABEL} · tiny-ss-test: SingleStream")
    memory = [line for line in run.splitlines() if line.startswith("  memory ")]
    assert len(memory) == 1
    assert re.search(r"peak RSS [\d,.]+ MiB (over the measured window|since the worker)", memory[0])
    assert "arena not exposed by onnxruntime" in memory[0]
    assert main(["show", str(runs["plain"])]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("tiny-ss-test: SingleStream")


def test_compare_names_each_side_by_label_or_directory_with_memory_and_its_ratio(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    main(["compare", str(runs["labelled"]), str(runs["plain"])])
    out = capsys.readouterr().out
    assert f"  A  {LABEL}\n" in out
    assert f"  B  {runs['plain'].name}\n" in out  # no label: the run directory's name
    row = next(line for line in out.splitlines() if line.startswith("peak RSS (MiB)"))
    a, b, ratio = row.split()[3:6]
    assert float(b.replace(",", "")) / float(a.replace(",", "")) == pytest.approx(
        float(ratio.rstrip("x")), abs=0.01
    )


def test_the_report_names_groups_by_label_in_markdown_and_html(runs: dict[str, Path]) -> None:
    harness_printed(["report", str(runs["labelled"]), str(runs["plain"])])
    report = runs["labelled"] / "report"
    markdown = (report / "report.md").read_text()
    html = (report / "report.html").read_text()
    assert f"## {LABEL} · tiny fp32 · SingleStream" in markdown
    assert f"{LABEL} · tiny fp32 · SingleStream" in html
    assert "| peak RSS (MiB) |" in markdown
    assert "peak RSS: the worker's resident-set high-water mark (VmHWM)" in markdown


def test_the_site_names_the_group_by_label_on_every_page(runs: dict[str, Path]) -> None:
    index = (runs["site"] / "index.html").read_text()
    assert LABEL in index
    comparisons = list((runs["site"] / "compare").rglob("*.html"))
    assert comparisons and any(LABEL in page.read_text() for page in comparisons)
    entries = [p for p in (runs["site"] / "entries").glob("*/index.html") if LABEL in p.read_text()]
    assert len(entries) == 1


def test_a_hostile_label_is_escaped_on_every_page_and_in_every_markdown_file(
    runs: dict[str, Path],
) -> None:
    harness_printed(["report", str(runs["hostile"])])
    compared = runs["root"] / "compared"
    main(["compare", str(runs["labelled"]), str(runs["hostile"]), "--out", str(compared)])
    assert "&lt;script&gt;x&lt;/script&gt;" in (compared / "compare.html").read_text()
    pages = [
        runs["hostile"] / "report" / "report.html",
        compared / "compare.html",
        *runs["site"].rglob("*.html"),
    ]
    shown = 0
    for page in pages:
        text = page.read_text()
        assert "<script>x" not in text, page
        assert not re.search(r"""href\s*=\s*["']?\s*javascript""", text, re.I), page
        shown += "&lt;script&gt;x&lt;/script&gt;" in text
    assert shown >= 3  # the report, the index and its entry page, at least
    markdown = [
        runs["hostile"] / "report" / "report.md",
        compared / "compare.md",
        *runs["site"].rglob("report.md"),
    ]
    for file in markdown:
        text = file.read_text()
        assert "<script>" not in text, file
        assert not re.search(r"(?<!\\)\]\(javascript:", text), file  # `\](` is text
    assert any("&lt;script>x&lt;/script>" in f.read_text() for f in markdown)


@pytest.mark.parametrize(
    "label",
    ["two\nlines", "bell\x07", "rtl\u202eoverride", "", "x" * 65, " padded"],
    ids=["newline", "control", "bidi", "empty", "too-long", "space"],
)
@pytest.mark.parametrize("verb", ["run", "bench", "sweep", "reproduce", "fleet"])
def test_a_label_outside_the_grammar_is_refused_before_anything_runs(
    runs: dict[str, Path], verb: str, label: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root, out = runs["root"], runs["root"] / f"refused-{verb}"
    ss = str(root / "ss.yaml")
    argv = {
        "run": ["run", ss],
        "bench": ["bench", str(root / "suite.yaml")],
        "sweep": ["sweep", ss],
        "reproduce": ["reproduce", str(runs["plain"])],
        "fleet": ["fleet", "slurm", str(root / "suite.yaml"), "--partition", "p", "--dry-run"],
    }[verb]
    write_scenario(root / "suite.yaml", "name: lab\nprofile: quick\nscenarios: [ss.yaml]\n")
    assert main([*argv, "--label", label, "--out", str(out)]) == ConfigError.exit_code
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --label: ")
    assert err.endswith(f"a label is {LABEL_GRAMMAR}")
    assert "\n" not in err and "\x07" not in err and "\u202e" not in err
    assert not out.exists() or not any(out.iterdir())  # nothing ran


def test_a_fleet_carries_its_label_to_every_run_and_its_merged_table(
    runs: dict[str, Path],
) -> None:
    root = runs["root"]
    write_scenario(root / "fsuite.yaml", "name: lab\nprofile: quick\nscenarios: [ss.yaml]\n")
    argv = ["fleet", "slurm", str(root / "fsuite.yaml"), "--partition", "p", "--trials", "1"]
    fleet = harness_dir([*argv, "--label", HOSTILE, "--out", str(root / "f"), "--dry-run"])
    assert json.loads((fleet / "fleet.json").read_text())["label"] == HOSTILE
    harness_printed(["fleet", "task", str(fleet), "--index", "0"])
    results = list(fleet.rglob("result.json"))
    assert results and {json.loads(r.read_text())["label"] for r in results} == {HOSTILE}
    main(["fleet", "collect", str(fleet)])
    merged = (fleet / "fleet-merged.md").read_text()
    assert "&lt;script>x&lt;/script>" in merged and "<script>" not in merged


def test_bench_sweep_and_reproduce_record_their_label(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = runs["root"]
    suite = write_scenario(
        root / "bsuite.yaml", "name: lab\nprofile: quick\nscenarios: [ss.yaml]\n"
    )
    offline = write_scenario(root / "offline.yaml", TINY_OFFLINE)
    bench = ["bench", str(suite), "--label", "bench 1", "--out", str(root / "b")]
    sweep = ["sweep", str(offline), "--batches", "1,2", "--trials", "1", "--label", "sweep 1"]
    again = ["reproduce", str(runs["plain"]), "--trials", "1", "--label", "again"]
    made = {
        "bench": harness_dir(bench),
        "sweep": harness_dir([*sweep, "--out", str(root / "s")]),
    }
    main([*again, "--out", str(root / "r")])  # its verdict (here, on a busy machine) aside
    made["reproduce"] = next((root / "r").iterdir())
    assert (made["reproduce"] / "reproduction.json").is_file()
    for verb, label in (("bench", "bench 1"), ("sweep", "sweep 1"), ("reproduce", "again")):
        files = [p for p in made[verb].rglob("result.json") if "recorded" not in p.parts]
        assert files and {json.loads(p.read_text())["label"] for p in files} == {label}, verb
    capsys.readouterr()
    assert main(["show", str(made["sweep"])]) == 0
    assert capsys.readouterr().out.startswith(f"sweep 1 ({made['sweep']}): sweep group")
