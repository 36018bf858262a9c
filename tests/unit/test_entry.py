"""The console script's first moments: a stop signal there is one line, never a traceback."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tests.conftest import REPO

# The process installs the start-up handlers, then stops itself as a user would, while it
# would still be importing the CLI: the handler must answer, not Python's default.
STOP_ITSELF = (
    "import os, signal, time\n"
    "from harness.entry import handle_stops_while_starting\n"
    "handle_stops_while_starting()\n"
    "os.kill(os.getpid(), signal.{name})\n"
    "time.sleep(30)\n"
    "print('not stopped')\n"
)


@pytest.mark.parametrize(
    ("name", "code", "shown"),
    [("SIGINT", 130, "Ctrl-C"), ("SIGTERM", 143, "SIGTERM"), ("SIGHUP", 129, "SIGHUP")],
)
def test_a_stop_while_starting_is_one_line_and_its_code(name: str, code: int, shown: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", STOP_ITSELF.format(name=name)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == code
    assert (
        done.stderr == f"error: interrupted ({shown}) while harness started; nothing was written\n"
    )
    assert "not stopped" not in done.stdout
    assert int(signal.Signals[name]) + 128 == code


def test_python_dash_m_harness_is_the_console_script() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", "--version"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("beyond-tops "), done.stdout
