"""The typer CLI: `main` is the console script; one module per command group."""

import os
import signal
import sys
import threading

from skillforge.cli.pipes import reopen_closed

reopen_closed()  # `skillforge ... >&-`: before rich's consoles or any file takes descriptor 1

if os.path.basename(sys.argv[0]) == "skillforge" and threading.current_thread() is threading.main_thread():
    # Ctrl-C while the console script is still importing (langgraph, rich, ...): nothing has
    # happened yet, so one line and exit 130; main() installs the real handler (cli/interrupt.py).
    signal.signal(signal.SIGINT, lambda *_: (os.write(2, b"interrupted\n"), os._exit(130)))
