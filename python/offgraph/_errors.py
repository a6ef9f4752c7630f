"""The exceptions of offgraph: one class per status of the C API (offgraph.h).

Each carries the C library's one-line message. They derive from the built-in
exception a Python caller would expect (ValueError for a bad argument,
IndexError for an out-of-range token id or length) and from offgraph.Error.
"""


class Error(Exception):
    """Any failure reported by the offgraph library."""


class InvalidArgumentError(Error, ValueError):
    """A bad argument: an unknown name, a value out of its range, a missing file."""


class NotFoundError(InvalidArgumentError, FileNotFoundError):
    """A model, tokenizer or other file that does not exist (also a FileNotFoundError)."""

    def __init__(self, path: str):
        super().__init__(f"{path}: no such file or directory")
        # As open() fills them: str() is "[Errno 2] no such file or directory: '<path>'".
        self.errno = 2  # ENOENT
        self.strerror = "no such file or directory"
        self.filename = path


class ClosedError(Error):
    """The model, session or engine was closed."""


class OutOfRangeError(Error, IndexError):
    """A token id outside the vocabulary, or a length past the history."""


class BusyError(Error):
    """The session is in use by another thread (a session is used by one thread at a time)."""


class StateError(Error):
    """Not possible now: nothing to undo, no logits yet, a stream still running."""


class CapacityError(Error):
    """The tokens do not fit in the session's cache."""


class CancelledError(Error):
    """A prefill was cancelled (og_session_cancel) and taken back."""
