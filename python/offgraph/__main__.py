"""`python3 -m offgraph COMMAND ...`: the offgraph command line.

It runs the `offgraph` program that was built or installed with this package
(liboffgraph.so is the C API alone; the command line and the server are the
program's), so every subcommand, flag, message and exit code is the program's.
OFFGRAPH_PROGRAM names another program to run instead.
"""
import os
import sys


def program() -> str:
    """The path of the offgraph program this package runs."""
    if os.environ.get("OFFGRAPH_PROGRAM"):
        return os.environ["OFFGRAPH_PROGRAM"]
    try:
        from ._program import PROGRAM  # written by the build (cmake/library.cmake)
    except ImportError:
        PROGRAM = ""
    if PROGRAM and os.path.exists(PROGRAM):
        return PROGRAM
    import shutil
    return shutil.which("offgraph") or ""


def main() -> int:
    path = program()
    if not path:
        print("offgraph: the offgraph program is not installed beside this package (set OFFGRAPH_PROGRAM)",
              file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, ["offgraph"] + sys.argv[1:])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
