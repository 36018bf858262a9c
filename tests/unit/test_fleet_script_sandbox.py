"""Issue #23: fleet.sbatch and submit.sh run under bash in a sandbox, from odd and hostile values.

The scheduler's tools and harness itself are stubs on PATH that only record their argv. A
value the grammar allows (a fleet path with spaces, `$(...)`, backquotes, quotes, `;`, `#`
or `%`) must reach each command as one word, run nothing, and leave sbatch's `#SBATCH`
block whole (--exclusive, --time, --output). A value the grammar refuses never becomes a
script at all. sbatch's own directive parsing is ported below from src/sbatch/opt.c.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import ConfigError
from harness.fleet import slurm
from harness.fleet.plan import FleetPlan, TaskSpec
from tests.conftest import TINY_SS

BASH = shutil.which("bash") or "/bin/bash"
STUBS = ("sbatch", "srun", "scancel", "squeue", "docker", "harness")
MARKER = "PWNED"
# Directory names the grammar allows, each of which a shell would take for code if unquoted
ODD_NAMES = [
    "with space",
    f"$(touch {MARKER})",
    f"`touch {MARKER}`",
    f"q'uo\"te ${{IFS}}$(touch {MARKER})",
    f"semi;touch {MARKER};x",
    f"#hash && touch {MARKER} | cat",
    "100%A_%a%%x",
]


def _stubs(root: Path) -> Path:
    """Stub commands that append their name and argv (NUL-separated) to $STUB_LOG."""
    stubs = root / f"stubs $(touch {MARKER}) dir"
    stubs.mkdir(parents=True)
    for name in STUBS:
        path = stubs / name
        path.write_text(
            "#!/bin/sh\n"
            'for word in "$(basename "$0")" "$@"; do printf \'%s\\0\' "$word"; done \\\n'
            '  >> "$STUB_LOG"\n'
            "printf '\\036' >> \"$STUB_LOG\"\n"
            'if [ "$(basename "$0")" = sbatch ]; then echo 4242; fi\n'
        )
        path.chmod(0o755)
    return stubs


def _calls(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [call.split("\0")[:-1] for call in log.read_text().split("\x1e") if call.strip("\0")]


def _run(shell: str, script: Path, sandbox: Path, stubs: Path) -> list[list[str]]:
    """Run `script` with `shell` in `sandbox`; the stubs' calls, in order."""
    log = sandbox / f"{script.name}.calls"
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "STUB_LOG": str(log), "HOME": str(sandbox)}
    done = subprocess.run(
        [shell, str(script)], cwd=sandbox, env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return _calls(log)


def _suite(root: Path) -> Path:
    (root / "ss.yaml").write_text(TINY_SS)
    suite = root / "suite.yaml"
    suite.write_text("name: sandbox\nprofile: quick\nscenarios: [ss.yaml]\n")
    return suite


def sbatch_words(line: str) -> list[str]:
    """The words sbatch reads from one directive's text (opt.c get_argument, ported)."""
    words, i = [], 0
    while i < len(line):
        while i < len(line) and line[i].isspace():
            i += 1
        word, quote, escape, started = "", "", False, False
        while i < len(line) and (quote or not line[i].isspace()):
            char = line[i]
            i += 1
            if escape:
                escape = False
            elif char == "\\":
                escape = True
                continue
            elif quote:
                if char == quote:
                    quote = ""
                    continue
            elif char in "\"'":
                quote, started = char, True
                continue
            elif char == "#":
                return [*words, word] if word or started else words
            word += char
            started = True
        assert not quote, f"sbatch: unmatched {quote} in {line!r}"
        if word or started:
            words.append(word)
    return words


def sbatch_options(script: str) -> list[str]:
    """The options sbatch takes from a script: #SBATCH lines up to the first command."""
    options: list[str] = []
    for line in script.splitlines()[1:]:
        if line.startswith("#SBATCH"):
            options += sbatch_words(line[len("#SBATCH") :])
        elif line.strip() and not line.lstrip().startswith("#"):
            break  # sbatch stops at the first line that is not a comment
    return options


def expand_pattern(pattern: str, job: str, task: str) -> str:
    """An --output pattern as slurmd expands it: %A, %a, and %% for a literal %."""
    out, i = "", 0
    while i < len(pattern):
        if pattern[i] == "%" and i + 1 < len(pattern):
            out += {"A": job, "a": task, "%": "%"}.get(pattern[i + 1], pattern[i : i + 2])
            i += 2
        else:
            out += pattern[i]
            i += 1
    return out


def _plan_odd(tmp_path: Path, name: str, stubs: Path) -> Path:
    out = tmp_path / name / "o"
    harness = str(stubs / "harness")
    argv = ["fleet", "slurm", str(_suite(tmp_path)), "--partition", "debug", "--time", "7"]
    argv += ["--nodelist", "n[1-2]", "--sbatch=--qos=high", "--out", str(out), "--dry-run"]
    assert main([*argv, "--harness", shlex.quote(harness)]) == 0
    (fleet,) = out.iterdir()
    return fleet


@pytest.mark.parametrize("name", ODD_NAMES)
def test_odd_paths_reach_each_command_as_one_word_and_run_nothing(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    stubs = _stubs(tmp_path / "bin")
    fleet = _plan_odd(tmp_path, name, stubs)
    capsys.readouterr()
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    script = fleet / slurm.SCRIPT_FILE
    assert _run(BASH, script, sandbox, stubs) == [["harness", "fleet", "task", str(fleet)]]
    submitted = _run("sh", fleet / slurm.SUBMIT_FILE, sandbox, stubs)
    assert submitted == [
        ["sbatch", "--parsable", "--array=0", "--nodelist=n1", str(script)],
        ["sbatch", "--parsable", "--array=1", "--nodelist=n2", str(script)],
    ]
    assert not [p for p in tmp_path.rglob(f"*{MARKER}*") if p.name == MARKER]
    options = sbatch_options(script.read_text())
    assert {"--exclusive", "--time=7", "--partition=debug", "--qos=high"} <= set(options)
    assert "--job-name=beyond-tops-sandbox" in options
    (output,) = [o.partition("=")[2] for o in options if o.startswith("--output=")]
    assert expand_pattern(output, "4242", "1") == f"{fleet}/logs/4242_1.out"
    assert options[-1] == "--open-mode=append"  # the block runs to its end: nothing cut it


def _plan(suite: str = "s", node: str | None = None) -> FleetPlan:
    task = TaskSpec(index=0, node=node, replica=1, entries=())
    return FleetPlan(
        kind="slurm",
        suite=suite,
        hw="cpu",
        profile="quick",
        runner="local",
        image=None,
        shard_by="scenario",
        tasks=(task,),
    )


HOSTILE = [
    ("suite", {"suite": f"x\ntouch {MARKER}"}, "suite name"),
    ("suite", {"suite": f"x;touch {MARKER}"}, "suite name"),
    ("node", {"node": f"n1\ntouch {MARKER}"}, "--nodelist"),
    ("fleet", {"fleet": f"/tmp/f\ntouch {MARKER}"}, "control character"),
    ("fleet", {"fleet": "/tmp/back\\slash"}, "backslash"),
    ("fleet", {"fleet": "/tmp/line\u2028sep"}, "control character"),
    ("harness", {"harness": [f"harness\n{MARKER}"]}, "--harness"),
]


@pytest.mark.parametrize(("what", "change", "message"), HOSTILE, ids=[h[2] for h in HOSTILE])
def test_values_the_grammar_refuses_never_become_a_script(
    what: str, change: dict[str, object], message: str
) -> None:
    plan = _plan(str(change.get("suite", "s")), change.get("node"))  # type: ignore[arg-type]
    fleet = Path(str(change.get("fleet", "/tmp/fleet")))
    harness: Sequence[str] = change.get("harness", ["harness"])  # type: ignore[assignment]
    options = slurm.SlurmOptions(partition="debug")
    with pytest.raises(ConfigError, match=message):
        slurm.render_script(fleet, plan, options, harness)


def test_submit_sh_refuses_a_hostile_node_or_fleet_path() -> None:
    plan = _plan(node=f"n1;touch {MARKER}")
    with pytest.raises(ConfigError, match="--nodelist: 'n1;touch PWNED' is not a node name"):
        slurm.render_submit(Path("/tmp/fleet"), slurm.plan_submissions(plan))
    with pytest.raises(ConfigError, match=r"fleet directory: .* control character"):
        slurm.render_submit(Path("/tmp/f\nx"), slurm.plan_submissions(_plan()))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"partition": f"debug;touch {MARKER}"}, r"--partition: 'debug;touch PWNED' is not a"),
        ({"partition": "debug\n#SBATCH --time=1"}, "--partition: .* is not a partition name"),
        ({"account": "lab`id`"}, "--account: 'lab`id`' is not an account name"),
        ({"extra": ("--qos=high\nrm -rf x",)}, "--sbatch: .* is not one sbatch option"),
        ({"extra": ("--qos=a;b",)}, "--sbatch --qos: 'a;b' is not a QOS name"),
        ({"extra": ("--output=/tmp/x",)}, "--sbatch: '--output=/tmp/x' would set --output"),
        ({"extra": ("--ti=1",)}, "would set --time"),
        ({"extra": ('--comment="x y"',)}, "is not one sbatch option"),
    ],
)
def test_hostile_sbatch_options_are_refused_by_name(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        slurm.SlurmOptions(partition=str(kwargs.pop("partition", "debug")), **kwargs)  # type: ignore[arg-type]


def test_a_refused_value_at_the_cli_writes_no_fleet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    argv = ["fleet", "slurm", str(_suite(tmp_path)), "--partition", f"debug;touch {MARKER}"]
    assert main([*argv, "--out", str(out), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "--partition: 'debug;touch PWNED'" in err
    assert not out.exists()


def test_the_sandbox_parser_reads_sbatch_lines_as_sbatch_does() -> None:
    assert sbatch_words(' --output="/a b/x" --open-mode=append # tail') == [
        "--output=/a b/x",
        "--open-mode=append",
    ]
    # as in opt.c, a backslash escapes no space: the word ends there all the same
    assert sbatch_words(" --comment='it''s' a\\ b") == ["--comment=its", "a", "b"]
    assert expand_pattern("/x/100%%A/%A_%a.out", "9", "2") == "/x/100%A/9_2.out"
