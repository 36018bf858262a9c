"""The `harness` console script: a stop signal is one line from the first moment, not a traceback.

The CLI installs its stop handlers once it runs (harness.errors); importing it takes a few
hundred milliseconds, in which Python's defaults would print KeyboardInterrupt's traceback on
Ctrl-C. So this module, which imports nothing of the harness, handles the stop signals first:
nothing has been written yet, so such a stop says so and exits with the signal's code.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _stopped_while_starting(signum: int, _frame: FrameType | None) -> None:
    name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    os.write(
        2, f"error: interrupted ({name}) while harness started; nothing was written\n".encode()
    )
    os._exit(128 + signum)  # 130, 143, 129: the codes harness.errors gives these stops


def handle_stops_while_starting() -> None:
    """Until the CLI installs its own handlers, a stop signal is one line and its code."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stopped_while_starting)


def main() -> int:
    """Handle stop signals, then import and run the CLI (which installs its own handlers)."""
    handle_stops_while_starting()
    from harness.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
