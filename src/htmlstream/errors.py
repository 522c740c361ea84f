"""The exceptions htmlstream raises (all derive from :class:`HtmlStreamError`), and the parse
errors it reports on request (:class:`ParseError`, which is not an exception).

Runs over many inputs that report failures instead of raising them (the WARC functions, the
Dask jobs, :func:`htmlstream.scrape.scrape` with ``on_error="skip"``) follow one rule,
:func:`check_failures`: when *every* input failed, all with the same type of error, the run
raises :class:`AllInputsFailed` (a wrong output folder, a missing extra, a handler that always
raises: nothing would be done); when some failed, one summary line is logged (``WARNING``, on the
run's logger), never one line per input.  A run that hands each failure to its caller (the
scraper's pages) only logs the line, all failed or not.

The entry points of the public API check the types of what they are given, once per call, with
:func:`check_type` and :func:`check_callable`: the ``TypeError`` names the parameter, what it
accepts and what it got."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

__all__ = [
    "BYTES_LIKE",
    "AllInputsFailed",
    "BufferLimitExceeded",
    "EncodingError",
    "HtmlStreamError",
    "ParseError",
    "ParseErrorCallback",
    "ParsingAmbiguityError",
    "SelectorError",
    "check_callable",
    "check_failures",
    "check_type",
]


def check_type(value: object, types: type | tuple[type, ...], where: str, param: str,
               accepted: str) -> None:
    """Raise the ``TypeError`` of htmlstream's public API when ``value`` is not one of
    ``types``: ``"{where}: {param} must be {accepted}, not {type}"`` (e.g. ``"sanitize(): html
    must be str or bytes-like (bytes, bytearray, memoryview), not int"``).

    Every entry point checks what it is given this way, once per call at the API boundary
    (never per chunk in the engine); recipes and integrations of your own may too.
    """
    if not isinstance(value, types):
        raise TypeError(f"{where}: {param} must be {accepted}, not {type(value).__name__}")


def check_callable(value: object, where: str, param: str, accepted: str) -> None:
    """:func:`check_type` for a callable parameter (``accepted`` says what it is called
    with)."""
    if not callable(value):
        raise TypeError(f"{where}: {param} must be {accepted}, not {type(value).__name__}")


#: What the byte-taking entry points accept, for :func:`check_type`.
BYTES_LIKE: Final = (bytes, bytearray, memoryview)


class HtmlStreamError(Exception):
    """Base class of every error raised by htmlstream."""


class BufferLimitExceeded(HtmlStreamError):
    """More bytes had to be carried over between chunks than a configured limit allows.

    Attributes:
        limit_name: the setting that was exceeded (e.g. ``"max_buffer_size"``).
        limit: its value in bytes.
        construct: what was being read (e.g. ``"an unterminated start tag"``).
        offset: the stream offset (in bytes) where that construct began.
    """

    def __init__(self, limit_name: str, limit: int, construct: str, offset: int) -> None:
        self.limit_name = limit_name
        self.limit = limit
        self.construct = construct
        self.offset = offset
        unit = " bytes" if limit_name.endswith("size") else ""
        super().__init__(
            f"{limit_name}={limit}{unit} exceeded while reading {construct} "
            f"that began at byte offset {offset}"
        )


class ParsingAmbiguityError(HtmlStreamError):
    """The right tokenizer state cannot be known without building a whole tree (``strict=True``).

    Attributes:
        tag_name: the tag whose meaning is ambiguous.
        offset: the stream offset of its ``<``.
    """

    def __init__(self, tag_name: str, offset: int, reason: str = "") -> None:
        self.tag_name = tag_name
        self.offset = offset
        detail = f": {reason}" if reason else ""
        super().__init__(
            f"ambiguous text-content tag <{tag_name}> at byte offset {offset}{detail}; a browser "
            f"may read what follows either as text or as markup"
        )


class EncodingError(HtmlStreamError):
    """An encoding is unknown, not supported by the byte-level engine, or cannot encode a value."""


class SelectorError(HtmlStreamError, ValueError):
    """A CSS selector is invalid or cannot be decided while streaming.

    Attributes:
        selector: the selector text.
        position: the character position of the problem in ``selector``.
    """

    def __init__(self, message: str, selector: str = "", position: int = 0) -> None:
        self.selector = selector
        self.position = position
        super().__init__(f"{message}: position {position}" if selector else message)


@dataclass(frozen=True, slots=True)
class ParseError:
    """A parse error of the WHATWG tokenizer, as handed to an ``on_error`` callback.

    Parse errors are never raised: a browser reads every document, and so does htmlstream.
    They are looked for only when ``on_error`` is given (:class:`~htmlstream.Tokenizer`,
    :func:`~htmlstream.tokenize`, :class:`~htmlstream.Rewriter`); see docs/guide/errors.md.

    Attributes:
        code: the error's name in the HTML standard, e.g. ``"eof-in-tag"`` or
            ``"missing-semicolon-after-character-reference"``.
        offset: where it is, in bytes from the start of the input (as ``Token.offset``): the
            character the tokenizer was reading when it found the error, or the end of the
            input for the ``eof-...`` errors.
        line: the line of ``offset``, from 1 (CR, LF and CRLF each end a line).
        column: the column of ``offset``, from 1, in characters as html5lib-tests count them
            (UTF-16 code units: a character beyond U+FFFF counts two; in an encoding other
            than UTF-8, one per byte).
    """

    code: str
    offset: int
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.code} at line {self.line}, column {self.column} (byte {self.offset})"


#: The type of an ``on_error`` callback: called with each :class:`ParseError`, in input order.
ParseErrorCallback: TypeAlias = Callable[[ParseError], object]


class AllInputsFailed(HtmlStreamError):
    """Every input of a run that reports failures failed, for the same reason: nothing was done
    (see :func:`check_failures`).

    Attributes:
        what: what the inputs are (``"WARC files"``, ``"HTML records"``...).
        count: how many inputs there were (all failed).
        reason: the type of their error (``"FileNotFoundError"``).
        first: the first input's error, in full (``"FileNotFoundError: [Errno 2] ..."``).
    """

    def __init__(self, what: str, count: int, reason: str, first: str) -> None:
        self.what = what
        self.count = count
        self.reason = reason
        self.first = first
        every = "1 of 1" if count == 1 else f"all {count}"
        super().__init__(f"{every} {what} failed with {reason}; the first: {first}")


def _reason(error: str) -> str:
    return error.partition(":")[0].strip() or error


def check_failures(what: str, errors: Sequence[str | None],
                   logger: logging.Logger | None = None, *, raise_all: bool = True) -> str | None:
    """The rule of the runs that report failures instead of raising them, applied to one run's
    outcome: ``errors`` has one item per input, None for an input that succeeded, else its error
    as ``"TypeName: message"``.

    Raises :class:`AllInputsFailed` when every input failed with the same type of error (unless
    ``raise_all`` is False: for runs that hand each failure to the caller, as
    :func:`htmlstream.scrape.scrape` with ``on_error="skip"``).  Otherwise, when some failed,
    returns one summary line (``"2 of 5 WARC files failed: 1 FileNotFoundError, 1 WarcError;
    the first: ..."``), logged at ``WARNING`` on ``logger`` when one is given; None when
    nothing failed (or there were no inputs).
    """
    check_type(what, str, "check_failures()", "what", "a str (what the inputs are)")
    if isinstance(errors, str) or not isinstance(errors, Sequence):
        raise TypeError(f"check_failures(): errors must be a sequence of str or None (one per "
                        f"input), not {type(errors).__name__}")
    failed = [error for error in errors if error is not None]
    if not failed:
        return None
    reasons = Counter(_reason(error) for error in failed)
    if len(failed) == len(errors) and len(reasons) == 1:
        error = AllInputsFailed(what, len(errors), next(iter(reasons)), failed[0])
        if raise_all:
            raise error
        line = str(error)
    else:
        counts = ", ".join(f"{n} {reason}" for reason, n in reasons.most_common())
        line = f"{len(failed)} of {len(errors)} {what} failed: {counts}; the first: {failed[0]}"
    if logger is not None:
        logger.warning("%s", line)
    return line
