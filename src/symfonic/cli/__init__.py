"""The ``symfonic`` command line: each subcommand in its own module."""
