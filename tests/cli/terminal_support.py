"""A client in a pseudo-terminal, as a person runs it: what the terminal tests share.

Each client is the installed ``symfonic`` script in a pty (pexpect) 80 columns
wide. What the person sees is the pty's output with the terminal's control
sequences taken out; the raw bytes are kept to check for colour.
"""

from __future__ import annotations

import os
import re
import time

import pexpect

from serve_support import console_script

KEY = "alice-terminal-key"
IBAN = "DE89 3704 0044 0532 0130 00"
WIDTH = 80
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")
COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def client_env(key: str | None = KEY, **extra: str) -> dict[str, str]:
    drop = {"NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "SYMFONIC_API_KEY", "TTY_COMPATIBLE"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["TERM"] = "xterm-256color"
    if key is not None:
        env["SYMFONIC_API_KEY"] = key
    return {**env, **extra}


class Screen:
    """A client in a pty: type lines, wait for text to appear, read what was shown."""

    def __init__(self, *args: str, env: dict[str, str]) -> None:
        self.child = pexpect.spawn(str(console_script()), list(args), env=env,
                                   encoding="utf-8", dimensions=(24, WIDTH), timeout=30)
        self.raw = ""
        self._seen = 0

    @property
    def text(self) -> str:
        return CONTROL.sub("", self.raw)

    def _read(self, timeout: float) -> bool:
        try:
            self.raw += self.child.read_nonblocking(65536, timeout=timeout)
            return True
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False

    def wait_for(self, wanted: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while (found := self.text.find(wanted, self._seen)) < 0:
            if not self._read(0.2) or time.monotonic() > deadline:
                raise AssertionError(f"never saw {wanted!r}; the screen shows:\n{self.text}")
        self._seen = found + len(wanted)

    def type(self, *lines: str) -> None:
        for line in lines:
            self.child.sendline(line)

    def end(self) -> int:
        """Ctrl-D, then the exit status once the client has gone."""
        if self.child.isalive():
            self.child.sendeof()
        while self._read(0.5):
            pass
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)

    def interrupt(self) -> None:
        """Ctrl-C, as the terminal sends it to the foreground process.

        A moment after the prompt appeared, as a person's key would come: the
        client is then waiting in its read, which is what is being tested. (A
        signal in the microseconds between the prompt being drawn and the read
        starting is seen only when the read returns.)
        """
        time.sleep(0.3)
        self.child.sendintr()

    def finish(self, timeout: float = 20) -> int:
        """The exit status once the client ends by itself, typing nothing more."""
        deadline = time.monotonic() + timeout
        while self._read(0.2):
            if time.monotonic() > deadline:
                raise AssertionError(f"the client did not end; the screen shows:\n{self.text}")
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)
