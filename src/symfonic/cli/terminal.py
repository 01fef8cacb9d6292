"""What the terminal clients print: one ``rich`` console, colour only on a terminal without
``NO_COLOR``, lines wrapped at spaces but never inside a value (a JSON string, an IBAN).
"""

from __future__ import annotations

import os
import re
import signal
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

# Spaces inside these spans do not break a line. textwrap breaks only at ASCII
# whitespace, so a private-use character holds their place while it wraps.
_UNBREAKABLE = re.compile(
    r'"(?:[^"\\]|\\.)*"'  # a JSON string literal
    r"|\b[A-Z]{2}\d{2}(?: [A-Z0-9]{1,4}){2,8}\b"  # an IBAN written in groups of four
)
# The start of what may still become an IBAN, at the end of streamed text.
_IBAN_SO_FAR = re.compile(r"\b[A-Z]{2}\d{2}(?: [A-Z0-9]{1,4})*\s*$")
_HELD = "\ue000"


def _hold(text: str) -> str:
    return _UNBREAKABLE.sub(lambda m: m.group(0).replace(" ", _HELD), text)


def fill(text: str, width: int, indent: int = 0, first: str = "") -> list[str]:
    """``text`` wrapped to ``width`` at spaces outside values; ``first`` leads the first line."""
    lines = textwrap.wrap(
        _hold(text),
        width=max(width, indent + 20),
        initial_indent=first or " " * indent,
        subsequent_indent=" " * indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]
    return [line.replace(_HELD, " ") for line in lines]


class PromptInterrupted(Exception):
    """Ctrl-C at a prompt; ``left`` says, in words, what was left as it was."""

    def __init__(self, left: str = "") -> None:
        super().__init__(left)
        self.left = left


@contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C raises ``KeyboardInterrupt`` in the blocking read, not after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def plain_wanted(environ: dict[str, str] | None = None) -> bool:
    """True when the user asked for no colour: ``NO_COLOR`` set to anything but empty."""
    return bool((environ if environ is not None else os.environ).get("NO_COLOR"))


class Terminal:
    """One console for a command's output, with the indicator and streamed text it owns."""

    def __init__(self, file: IO[str] | None = None, *, width: int | None = None) -> None:
        self.console = Console(
            file=file,
            color_system=None if plain_wanted() else "auto",
            highlight=False,
            markup=False,
            emoji=False,
            width=width,
        )
        self._live: Live | None = None
        self._column: int | None = None
        self._pending = ""
        self._space = ""
        self._indent = 0

    @property
    def width(self) -> int:
        return self.console.width

    # -- lines ---------------------------------------------------------------

    def line(
        self, body: str, style: str = "", *, label: str = "", label_style: str = "", indent: int = 0
    ) -> None:
        """``label`` then ``body``, wrapped so continuation lines align under the body."""
        self.quiet()
        self.end_text()
        lead = " " * indent + label
        for i, line in enumerate(fill(body, self.width, len(lead), first=lead)):
            text = Text()
            if i == 0 and label:
                text.append(" " * indent)
                text.append(label, style=label_style)
                text.append(line[len(lead) :], style=style)
            else:
                text.append(line, style=style)
            self.console.print(text, soft_wrap=True)

    def blank(self) -> None:
        self.quiet()
        self.end_text()
        self.console.print()

    def ask(self, prompt: str) -> str:
        """One line typed after ``prompt``; ``EOFError`` on Ctrl-D, ``PromptInterrupted`` on
        Ctrl-C."""
        self.quiet()
        self.end_text()
        try:
            with _interruptible():
                return self.console.input(Text(prompt, style="bold"))
        except KeyboardInterrupt:
            raise PromptInterrupted from None

    def interrupted(self, command: str, stop: PromptInterrupted) -> int:
        """End the prompt's line, say what was left as it was; the exit code 130 (Ctrl-C)."""
        self.quiet()
        self.end_text()
        self.console.print()
        left = f"; {stop.left}" if stop.left else ""
        print(f"symfonic {command}: interrupted{left}.", file=sys.stderr, flush=True)
        return 130

    # -- the indicator -------------------------------------------------------

    def working(self, what: str = "thinking") -> None:
        """Show ``what…`` with a spinner until the next output; only on a terminal."""
        if not self.console.is_terminal or self.console.is_dumb_terminal:
            return
        spinner = Spinner("dots", text=Text(f"{what}…", style="dim"), style="cyan")
        if self._live is None:
            self.end_text()
            self._live = Live(spinner, console=self.console, transient=True, refresh_per_second=10)
            self._live.start(refresh=True)
        else:
            self._live.update(spinner, refresh=True)

    def quiet(self) -> None:
        """Take the indicator down, leaving the cursor where the next output goes."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    # -- streamed text -------------------------------------------------------

    def text(self, delta: str, *, label: str = "", label_style: str = "") -> None:
        """Append streamed text, wrapping at spaces outside values as the words complete."""
        self.quiet()
        if self._column is None:
            self.console.print(Text(label, style=label_style), end="", soft_wrap=True)
            self._column = self._indent = len(label)
        self._pending += delta
        cut = self._pending.rfind(" ") + 1
        held = _IBAN_SO_FAR.search(self._pending[:cut])
        if held is not None:
            cut = held.start()
        self._write_words(self._pending[:cut])
        self._pending = self._pending[cut:]

    def end_text(self) -> None:
        """Finish streamed text, if any, with what is still held and a newline."""
        if self._column is None:
            return
        self._write_words(self._pending)
        self._pending = self._space = ""
        self._column = None
        self.console.print(soft_wrap=True)

    def _write_words(self, text: str) -> None:
        # A space is written only once the word after it is known to fit on the
        # line, so a wrapped line never ends in one.
        column = self._column or 0
        for word, space in re.findall(r"(\S*)(\s*)", _hold(text)):
            if word:
                if column > self._indent and column + len(self._space) + len(word) > self.width:
                    self._write("\n" + " " * self._indent)
                    column = self._indent
                else:
                    self._write(self._space)
                    column += len(self._space)
                self._space = ""
                self._write(word.replace(_HELD, " "))
                column += len(word)
            if "\n" in space:
                self._write("\n" * space.count("\n") + " " * self._indent)
                column, self._space = self._indent, ""
            else:
                self._space += space
        self._column = column

    def _write(self, text: str) -> None:
        if text:
            self.console.print(text, end="", soft_wrap=True)


def failed(command: str, message: str, stream: Any = None) -> int:
    """Say in one line why ``command`` cannot go on, on stderr; the exit code 1."""
    print(f"symfonic {command}: {message}", file=stream or sys.stderr)
    return 1
