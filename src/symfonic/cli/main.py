"""``symfonic``: the entry point; subcommands register themselves from their modules."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from importlib.metadata import version

from symfonic.cli.environment import epilog

COMMANDS = ("demo", "chat", "pauses", "webhooks", "serve", "migrate", "prune", "vacuum", "audit")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="symfonic",
        description="Agent turns that pause for a person and resume exactly once.",
    )
    root.add_argument("--version", action="version", version=f"symfonic {version('symfonic')}")
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"symfonic.cli.{name}").register(sub)
        command = sub.choices[name]
        command.epilog = epilog(name)
        command.formatter_class = argparse.RawDescriptionHelpFormatter
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
