"""The CLI helps: examples in every verb's help that parse, every default named, "did you mean"."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import _parser, main
from harness.cli.examples import EXAMPLES
from harness.errors import ERROR_CODES, ConfigError, ResultError

REPO = Path(__file__).resolve().parents[2]


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def _verbs() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_verb_has_examples_and_each_parses() -> None:
    verbs = _verbs()
    assert set(EXAMPLES) == set(verbs), "every verb has examples, and only verbs do"
    for name, examples in EXAMPLES.items():
        text = verbs[name].format_help()
        assert "examples:" in text, name
        for command, what in examples:
            assert f"  {command}\n" in text and f"# {what}" in text, (name, command)
            words = shlex.split(command)
            assert words[:2] == ["harness", name], command
            args = _parser().parse_args(words[1:])  # raises SystemExit if it does not parse
            assert args.verb == name


def test_every_default_is_named_in_the_help() -> None:
    for parser in _parsers(_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if action.default in (None, False, [], argparse.SUPPRESS):
                continue
            shown = formatter._get_help_string(action)  # what --help prints for the option
            assert shown and "default" in shown, (parser.prog, action.dest, action.default)
            if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
                usage = parser.format_usage()
                assert all(str(c) in usage for c in action.choices), (parser.prog, action.dest)


def test_a_mistyped_verb_or_choice_suggests_the_closest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases = [
        (["rnu"], "invalid choice: 'rnu'; did you mean 'run'?"),
        (["run", "x.yaml", "--profile", "quik"], "did you mean 'quick'?"),
        (["image", "build", "--hw", "nvdia"], "did you mean 'nvidia'?"),
        (["fleet", "slurm", "quick", "--shard", "nod"], "did you mean 'node'?"),
    ]
    for argv, fragment in cases:
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == ERROR_CODES[ConfigError].code
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert fragment in err, err
    with pytest.raises(SystemExit):
        main(["zzzz"])
    assert "did you mean" not in capsys.readouterr().err  # nothing close: no guess


def test_a_mistyped_suite_suggests_the_closest_and_lists_them(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # suites are looked up in the checkout's scenarios/
    assert main(["bench", "quik"]) == ERROR_CODES[ConfigError].code
    err = capsys.readouterr().err
    assert "scenarios/quik.yaml: no such file; did you mean 'quick'?" in err, err
    assert "suites: llm, quick, smoke, submission" in err, err
    assert "quick, smoke, submission" in _verbs()["bench"].format_help().replace("\n ", " ")


@pytest.mark.parametrize("verb", ["show", "compare", "report"])
def test_a_file_that_is_no_result_is_named(
    verb: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    argv = [verb, "README.md", "Makefile"] if verb == "compare" else [verb, "README.md"]
    assert main(argv) == ERROR_CODES[ResultError].code
    err = capsys.readouterr().err
    assert err.startswith("error: README.md: a file that holds no result;"), err
    assert "bundle" in err and "error: .:" not in err


def test_parsing_reads_no_scenario_file_only_the_help_lists_suites(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import harness.cli.measure as measure

    def listed() -> list[str]:
        raise AssertionError("scenarios/ read while parsing")

    monkeypatch.setattr(measure, "suite_names", listed)
    assert _parser().parse_args(["bench", "quick"]).suite == "quick"  # no read: no error
    monkeypatch.setattr(measure, "suite_names", lambda: ["alpha", "beta"])
    assert "(alpha, beta)" in _verbs()["bench"].format_help().replace("\n ", " ")
