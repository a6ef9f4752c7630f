"""`python3 -m offgraph COMMAND ...`: the offgraph command line, run in this process.

It is the same code as the `offgraph` program (both call og_cli_main in
liboffgraph.so), so every subcommand, flag, message and exit code is the same.
"""
import sys

from . import _offgraph


def main() -> int:
    # Python's own buffered output (none so far) goes first; the command writes through C stdio.
    sys.stdout.flush()
    return _offgraph.cli_main(["offgraph"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
