import importlib
import pkgutil
import re
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

import harness
from harness.cli import main
from harness.errors import (
    BROKEN_PIPE,
    CRASHED,
    ERROR_CODES,
    INTERRUPTED,
    INVALID,
    NOT_COMPARABLE,
    SHARES_PARENT_CODE,
    SLOWER,
    STOP_SIGNALS,
    SUCCESS,
    ConfigError,
    HarnessError,
    RunError,
    exit_code_of,
    exit_code_table,
    run_reporting_errors,
)

README = Path(__file__).resolve().parents[2] / "README.md"
# Modules that would do something on import rather than only define things.
RUN_ON_IMPORT = ("__main__",)


def _import_every_harness_module() -> None:
    for module in pkgutil.walk_packages(harness.__path__, prefix="harness."):
        if module.name.rsplit(".", 1)[-1] not in RUN_ON_IMPORT:
            importlib.import_module(module.name)


def _subclasses(cls: type[HarnessError]) -> list[type[HarnessError]]:
    found = []
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("harness."):  # not classes these tests define
            found += [sub, *_subclasses(sub)]
    return found


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


@pytest.fixture(scope="module")
def every_error() -> list[type[HarnessError]]:
    _import_every_harness_module()
    return [HarnessError, *_subclasses(HarnessError)]


def test_every_error_class_has_its_own_code_or_shares_one_on_purpose(
    every_error: list[type[HarnessError]],
) -> None:
    uncovered = [
        _qualname(cls)
        for cls in every_error
        if cls not in ERROR_CODES and _qualname(cls) not in SHARES_PARENT_CODE
    ]
    assert uncovered == [], "add these to harness.errors.ERROR_CODES (or SHARES_PARENT_CODE)"


def test_the_classes_that_share_a_code_exist_and_are_not_in_the_table(
    every_error: list[type[HarnessError]],
) -> None:
    names = {_qualname(cls): cls for cls in every_error}
    for name in SHARES_PARENT_CODE:
        assert name in names, f"{name} is listed in SHARES_PARENT_CODE but does not exist"
        assert names[name] not in ERROR_CODES


def test_codes_are_unique_and_none_is_reserved() -> None:
    codes = [entry.code for entry in ERROR_CODES.values()]
    assert len(codes) == len(set(codes))
    assert not {SUCCESS.code, INVALID.code, INTERRUPTED.code} & set(codes)
    assert INVALID.code == 1


def test_no_error_exits_with_loadgen_invalid(every_error: list[type[HarnessError]]) -> None:
    for cls in every_error:
        assert exit_code_of(cls).code != INVALID.code, cls
        assert cls.exit_code == exit_code_of(cls).code, cls


def test_a_bare_harness_error_gets_the_generic_code() -> None:
    generic = ERROR_CODES[HarnessError].code
    assert run_reporting_errors(_raising(HarnessError("something"))) == generic
    assert HarnessError.exit_code not in (0, 1, 130)


def test_exit_code_is_the_nearest_ancestors() -> None:
    class LocalError(ConfigError):
        pass

    assert exit_code_of(LocalError) is ERROR_CODES[ConfigError]
    assert LocalError("x").exit_code == 2
    assert run_reporting_errors(_raising(RunError("x"))) == 5


def test_keyboard_interrupt_exits_130(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_reporting_errors(_raising(KeyboardInterrupt())) == 130
    assert "interrupted" in capsys.readouterr().err


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_stop_signal_exits_128_plus_its_number(
    signum: int, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    before = signal.getsignal(signum)

    def call() -> int:
        signal.raise_signal(signum)  # the handler run_reporting_errors installed raises here
        return 0

    assert run_reporting_errors(call) == code
    assert f"interrupted ({signal.Signals(signum).name})" in capsys.readouterr().err
    assert signal.getsignal(signum) == before  # restored on the way out


def test_help_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert exit_code_table() in out
    for entry in (
        SUCCESS,
        INVALID,
        CRASHED,
        BROKEN_PIPE,
        *STOP_SIGNALS.values(),
        *ERROR_CODES.values(),
    ):
        assert re.search(rf"^  {entry.code} +{re.escape(entry.meaning)}$", out, re.MULTILINE)


def test_readme_lists_every_code() -> None:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"\*\*Exit codes\*\*[^:]*:(.*?)\n\n", text, re.DOTALL)
    assert match, "README.md has no '**Exit codes**:' paragraph"
    listed = [int(code) for code in re.findall(r"(?<![\w.])(\d+)\s", match.group(1))]
    expected = sorted(
        e.code
        for e in (
            SUCCESS,
            INVALID,
            NOT_COMPARABLE,
            SLOWER,
            CRASHED,
            BROKEN_PIPE,
            *STOP_SIGNALS.values(),
            *ERROR_CODES.values(),
        )
    )
    assert listed == expected


def _raising(exc: BaseException) -> Callable[[], int]:
    def call() -> int:
        raise exc

    return call


def test_an_error_line_shows_control_characters_from_foreign_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def fail() -> int:
        raise ConfigError("/tmp/a\x1b]0;pwned\x07.yaml: missing required key 'scenario'")

    assert run_reporting_errors(fail) == 2
    err = capsys.readouterr().err
    assert err == "error: /tmp/a\\x1b]0;pwned\\x07.yaml: missing required key 'scenario'\n"


def test_every_exit_code_of_every_verb_means_one_thing() -> None:
    # the table `harness --help` prints (errors, answers, signals) and reproduce's verdicts:
    # fleet's 32 and compare's answer once collided, as no test held the answers together
    from harness.errors import exit_code_table
    from harness.reproduce.codes import VERDICT_CODES

    listed = [int(line.split()[0]) for line in exit_code_table().splitlines()[1:]]
    assert len(listed) == len(set(listed)), listed
    verdicts = {e.code for e in VERDICT_CODES.values()} - {SUCCESS.code}
    assert not verdicts & set(listed), verdicts & set(listed)
