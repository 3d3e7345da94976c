"""`skillforge judge label RUN`: a person labels a stored evaluation run's output pairs blind, on a
local page (127.0.0.1 only) or with --tty in the terminal; each label is appended to
evaluation_sets/golden/<skill>.jsonl. The work is in skillforge/calibration/ (golden.py, labelpage.py,
tty.py); this module parses the options and prints."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from skillforge.cli.common import WorkspaceOpt, out
from skillforge.cli.interrupt import CtrlC
from skillforge.cli.output import plain
from skillforge.config import Workspace

if TYPE_CHECKING:
    from skillforge.state.calibration import GoldenPair

WAIT_S = 0.5
"""How often the serving loop looks whether every pair is labelled (Ctrl-C stops it at once)."""


def label(run: Annotated[str, typer.Argument(metavar="RUN", help="The evaluation run whose stored outputs to label "
                                                  "(its id, as `skillforge evaluate` prints it).")],
          skill: Annotated[str | None, typer.Option("--skill", help="The run's skill (checked against the run).")] = None,
          n: Annotated[int, typer.Option("--n", min=1, max=1000, help="Label at most this many pairs.")] = 30,
          tty: Annotated[bool, typer.Option("--tty", help="Ask in the terminal instead of a web page.")] = False,
          port: Annotated[int, typer.Option("--port", min=0, max=65535,
                                            help="Port of the page on 127.0.0.1 (0: any free port).")] = 0,
          no_browser: Annotated[bool, typer.Option("--no-browser", help="Only print the page's URL; do not try to "
                                                                         "open a browser.")] = False,
          labeller: Annotated[str, typer.Option("--labeller", help="Your name or initials, stored with each "
                                                                   "label.")] = "",
          workspace: WorkspaceOpt = None) -> None:
    """Label a run's output pairs blind (A / tie / B per dimension) into the skill's golden file."""
    from skillforge.calibration.golden import golden_path, pairs_from_run
    from skillforge.rules.ids import IdKind
    from skillforge.state.ids import require_id

    require_id(IdKind.RUN, run)  # it names files under runs/traces/: never a path
    ws = Workspace.open(workspace)
    pairs = pairs_from_run(ws, run, skill, n)
    path = golden_path(ws, pairs[0].skill)
    if tty:
        saved, labelled = _in_terminal(pairs, path, labeller)
    else:
        saved, labelled = _on_page(pairs, path, labeller, port, not no_browser, f"skill {pairs[0].skill} · run {run}")
    out.print(plain(f"appended {saved} label(s) to {path}; {labelled} of {len(pairs)} pair(s) of this session "
                    "labelled" + ("" if labelled == len(pairs) else f" (run `skillforge judge label {run}` again "
                                                                    "for the rest)")), soft_wrap=True)


def _in_terminal(pairs: list[GoldenPair], path: Path, labeller: str) -> tuple[int, int]:
    from skillforge.calibration.golden import labelled_ids
    from skillforge.calibration.tty import TtyLabeller

    session = TtyLabeller(pairs, path, stdin=sys.stdin, stdout=sys.stdout, labeller=labeller)
    try:
        session.run()
    except CtrlC:  # the CLI's SIGINT: stop, keeping what was saved
        sys.stdout.write("\nstopped; the labels saved so far are kept\n")
    done = labelled_ids(path)
    return session.saved, sum(p.pair_id in done for p in pairs)


def _on_page(pairs: list[GoldenPair], path: Path, labeller: str, port: int, browser: bool,
             title: str) -> tuple[int, int]:
    from skillforge.calibration.labelpage import LabelServer

    server = LabelServer(pairs, path, labeller=labeller, port=port, title=title)
    with server:
        out.print(plain(f"labelling {len(pairs)} output pair(s) blind: open {server.url}"), soft_wrap=True)
        out.print(plain(f"labels go to {path}; the page stops by itself once all are labelled (Ctrl-C stops "
                        "it sooner, keeping what was saved)"), soft_wrap=True)
        sys.stdout.flush()
        if browser:
            _open(server.url)
        try:
            while not server.all_done.wait(WAIT_S):
                pass
        except CtrlC:
            out.print("stopped; the labels saved so far are kept")
        labelled = len(server.labelled())
    return server.saved, labelled


def _open(url: str) -> None:
    """Open the page in a graphical browser when there seems to be one; never a text browser
    (lynx, w3m) that would take over this terminal."""
    if sys.platform not in ("darwin", "win32") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return
    import webbrowser
    try:
        found = webbrowser.get()
        if type(found) is not webbrowser.GenericBrowser:  # a console browser is a plain GenericBrowser
            found.open(url, new=2)
    except webbrowser.Error:
        pass
