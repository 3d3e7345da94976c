"""`skillforge judge label --tty`: the labelling page's questions asked in a terminal. Each pair is
printed (the request, the facts the judge is also given, the tool results, Answer A, Answer B; every
untrusted text with its control and invisible characters shown as escapes), then per dimension
`A/t/B` and a note; the label is appended at once (source "tty"). A bad answer is asked again; `s`
skips a pair, `q`, end of input or Ctrl-C stops, keeping what was saved."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from skillforge.calibration.golden import CHOICES, append_label, dimension_questions, visible
from skillforge.state.calibration import HUMAN_DIMENSIONS, GoldenPair

RULE = "─" * 72


class _Stop(Exception):
    """The person typed q."""


class _Skip(Exception):
    """The person typed s."""


class TtyLabeller:
    """Asks a person to label `pairs` on `stdin` / `stdout`, appending each label to `path`."""

    def __init__(self, pairs: Sequence[GoldenPair], path: Path, *, stdin: TextIO, stdout: TextIO,
                 labeller: str = "") -> None:
        self.pairs, self.path, self.labeller = list(pairs), path, labeller
        self.stdin, self.stdout = stdin, stdout
        self.saved = 0
        """Labels appended by this session."""
        self.skipped = 0
        self.stopped = False
        """True when the person stopped (q, end of input, Ctrl-C) before the last pair."""

    def say(self, text: str = "") -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def ask(self, prompt: str) -> str:
        """One line of input (without its newline); EOFError at the end of input."""
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\r\n")

    def run(self) -> int:
        """Label every pair in turn; returns how many labels were appended."""
        questions = dimension_questions()
        try:
            for i, pair in enumerate(self.pairs, 1):
                self.show(i, pair)
                try:
                    self.label_one(pair, questions)
                except _Skip:
                    self.skipped += 1
                    self.say("skipped")
        except (_Stop, EOFError, KeyboardInterrupt):
            self.stopped = True
            self.say("\nstopped; the labels saved so far are kept")
        return self.saved

    def show(self, i: int, pair: GoldenPair) -> None:
        self.say(f"\n{RULE}\nPair {i} of {len(self.pairs)} (the order of the answers is random)\n{RULE}")
        self.say(f"Request: {visible(pair.query)}")
        if pair.must_include:
            self.say(f"Facts a correct answer contains: {visible('; '.join(pair.must_include))}")
        if pair.must_not_include:
            self.say(f"Must not appear: {visible('; '.join(pair.must_not_include))}")
        if pair.fixtures_summary:
            self.say("Tool results the assistant saw:")
            self.say("\n".join("  " + line for line in visible(pair.fixtures_summary).splitlines()))
        for name, answer in (("A", pair.answer_a), ("B", pair.answer_b)):
            self.say(f"\n=== Answer {name} ===\n{visible(answer)}")
        self.say("")

    def label_one(self, pair: GoldenPair, questions: dict[str, str]) -> None:
        labels = {d: self.choice(d, questions[d]) for d in HUMAN_DIMENSIONS}
        note = self.ask("Note (optional, Enter for none): ").strip()
        added = append_label(self.path, pair, labels, note=note, source="tty", labeller=self.labeller)
        if added is None:
            self.say("already labelled: nothing appended")
        else:
            self.saved += 1
            self.say(f"saved ({self.saved} this session)")

    def choice(self, dimension: str, question: str) -> str:
        """A, B or tie for one dimension, asked again until the answer is one of them."""
        while True:
            answer = self.ask(f"{dimension.capitalize()}: {question}? [A/t/B, s skip, q quit] ").strip().lower()
            if answer in ("q", "quit"):
                raise _Stop
            if answer in ("s", "skip"):
                raise _Skip
            if answer in CHOICES:
                return CHOICES[answer]
            self.say("  answer A, t (tie) or B (or s to skip this pair, q to stop)")


__all__ = ["TtyLabeller"]
