"""Examples shown at the end of each verb's `--help`: one home, checked by a test that runs them.

Each line is a command a user types from the repository root, then what it does. The test
tests/unit/test_cli_help.py parses every example with the real parser, so an example that
names an option or choice the verb does not take fails there, not in a user's shell.
"""

from __future__ import annotations

import argparse

EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "models": (
        ("harness models list", "the zoo and the official models"),
        ("harness models build resnet50", "generate one zoo model into the cache"),
        ("harness models fetch resnet50-mlperf", "download MLPerf's file (where allowed)"),
    ),
    "image": (
        ("harness image build --hw nvidia", "build the pinned image from build/wheels/nvidia"),
        ("harness image ensure --hw cpu", "print this commit's image, building it if missing"),
    ),
    "run": (
        ("harness run scenarios/resnet50-offline.yaml", "one scenario, quick profile"),
        (
            "harness run scenarios/tiny-singlestream.yaml --model my.onnx",
            "any ONNX file in a scenario's settings",
        ),
        (
            "harness run scenarios/resnet50-offline.yaml --precision fp32,int8 --trials 5",
            "two precisions, five trials each",
        ),
    ),
    "bench": (
        ("harness bench", "the quick suite (scenarios/quick.yaml) on this CPU"),
        ("harness bench submission", "MLPerf's rules: 600 s a run"),
        ("harness bench quick --hw nvidia --runner docker", "in the pinned NVIDIA image"),
    ),
    "fingerprint": (
        ("harness fingerprint", "this machine, as text"),
        ("harness fingerprint --json", "as JSON"),
    ),
    "doctor": (("harness doctor --strict", "exit non-zero if anything would skew a run"),),
    "sweep": (
        ("harness sweep scenarios/resnet50-offline.yaml", "batch 1, 2, 4, ... to saturation"),
        ("harness sweep scenarios/tiny-offline.yaml --batches 1,8,32", "these batch sizes"),
        (
            "harness sweep scenarios/resnet50-server.yaml --server-rates auto",
            "Server latency against arrival rate, to the knee",
        ),
        (
            "harness sweep scenarios/llm-tiny-server.yaml --server-rates 20,40,80,160",
            "TTFT, TPOT, tokens/s and goodput against rate",
        ),
    ),
    "report": (
        ("harness report results/runs/RUN_OR_GROUP", "report.md + report.html beside it"),
        ("harness report A B --out reports/ab", "several results in one report"),
    ),
    "compare": (
        ("harness compare results/runs/A results/runs/B", "side by side, with significance"),
        ("harness compare A B --out cmp/", "also compare.md and compare.html"),
        ("harness compare BASE NEW --fail-if-slower 5%", "exit 34 when NEW is slower"),
        ("harness compare A B --json", "a versioned JSON document (--csv: rows)"),
    ),
    "show": (
        ("harness show results/runs/RUN_OR_GROUP", "a run, trials group, sweep or fleet"),
        ("harness show r.tar --trust alice.pub", "a signed bundle, verified first"),
        ("harness show results/runs/GROUP --json", "a versioned JSON document (--csv: rows)"),
    ),
    "compliance": (
        ("harness compliance TEST01 results/runs/RUN", "MLPerf's accuracy-in-performance audit"),
        ("harness compliance TEST04 results/runs/RUN", "MLPerf's caching audit"),
    ),
    "submission": (
        (
            "harness submission results/runs/GROUP --org acme --system box1 --division open "
            "--out sub/ --check",
            "MLPerf's v6.1 tree, checked by MLPerf's checker",
        ),
    ),
    "keygen": (("harness keygen --out keys/alice", "keys/alice (private) and keys/alice.pub"),),
    "bundle": (
        ("harness bundle results/runs/GROUP --key keys/alice --out r.tar", "signed, for others"),
    ),
    "verify": (
        ("harness verify r.tar --trust alice.pub", "signature, signer, files, numbers vs logs"),
        ("harness verify r.tar --trust-any", "any valid signer, its fingerprint printed"),
    ),
    "import": (
        ("harness import mlperf ../inference_results_v4.1/closed", "published results, as records"),
    ),
    "reproduce": (
        ("harness reproduce results/runs/GROUP", "run it again: REPRODUCED, or why not"),
        ("harness reproduce r.tar --trust alice.pub", "a colleague's signed bundle"),
        (
            "harness reproduce results/published-imports/RECORD --quick",
            "a published MLPerf result, run here, side by side",
        ),
    ),
    "fleet": (
        (
            "harness fleet slurm quick --partition gpu --nodes 4 --out fleets/q",
            "the suite as a Slurm job array",
        ),
        ("harness fleet status fleets/q", "each task's state"),
        ("harness fleet collect fleets/q", "one table, findings and a report"),
    ),
    "site": (
        ("harness site results/ --out site/", "a static site of every result under results/"),
    ),
}


# Stands in a help text for the suites in scenarios/, listed when the help is printed: building
# the parser (every command) reads no scenario file.
SUITES_TOKEN = "<suites>"


class LaidOutFormatter(argparse.HelpFormatter):
    """argparse's formatter, keeping text already laid out in lines and naming every default.

    Text with line breaks (examples, exit-code tables) is printed as written; one-line text is
    wrapped. An option whose default is a value and whose help does not state it gets
    "(default: X)" appended, so no default is left for the user to guess.
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" not in text:
            return super()._fill_text(text, width, indent)
        return "".join(indent + line for line in text.splitlines(keepends=True))

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.help is None:
            return None
        text = action.help
        if SUITES_TOKEN in text:  # read only when help is printed, never to parse
            from harness.cli.measure import suite_names

            text = text.replace(SUITES_TOKEN, ", ".join(suite_names()) or "none found")
        default = action.default
        if "default" in text or default in (None, False, [], argparse.SUPPRESS):
            return text
        return f"{text} (default: {default})".strip()


def finish_help(parser: argparse.ArgumentParser) -> None:
    """Every parser below `parser` gets LaidOutFormatter; each verb its examples."""
    parser.formatter_class = LaidOutFormatter
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            finish_help(sub)
            if parser.prog == "harness":  # a verb: its examples after what it already says
                _add_examples(sub, EXAMPLES.get(name, ()))


def _add_examples(parser: argparse.ArgumentParser, lines: tuple[tuple[str, str], ...]) -> None:
    if not lines:
        return
    listed = "\n".join(f"  # {what}\n  {command}" for command, what in lines)
    parser.epilog = "\n\n".join(p for p in (parser.epilog, f"examples:\n{listed}") if p)
