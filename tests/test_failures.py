"""The failure rule of the runs over many inputs, :func:`htmlstream.errors.check_failures`
(issue 37): every input failed alike raises, some failed gives one summary line."""

from __future__ import annotations

import logging

import pytest

from htmlstream import AllInputsFailed, HtmlStreamError
from htmlstream.errors import check_failures

LOG = logging.getLogger("htmlstream.test-failures")


def test_nothing_failed_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert check_failures("files", [], LOG) is None
        assert check_failures("files", [None, None], LOG) is None
    assert caplog.records == []


def test_every_input_failing_alike_raises() -> None:
    errors = ["FileNotFoundError: [Errno 2] No such file: 'a'",
              "FileNotFoundError: [Errno 2] No such file: 'b'"]  # (the type rules)
    with pytest.raises(AllInputsFailed) as info:
        check_failures("files", errors)
    error = info.value
    assert isinstance(error, HtmlStreamError)
    assert (error.what, error.count, error.reason, error.first) == ("files", 2, "FileNotFoundError",
                                                                    errors[0])
    assert str(error) == f"all 2 files failed with FileNotFoundError; the first: {errors[0]}"
    with pytest.raises(AllInputsFailed, match=r"^1 of 1 files failed with ValueError; the first: "
                                              r"ValueError: x: y$"):
        check_failures("files", ["ValueError: x: y"])


def test_some_failed_or_for_several_reasons_gives_one_line(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        some = check_failures("files", [None, "OSError: a", None, "OSError: b"], LOG)
        mixed = check_failures("files", ["OSError: a", "WarcError: not a WARC", "OSError: c"],
                               LOG)
    assert some == "2 of 4 files failed: 2 OSError; the first: OSError: a"
    assert mixed == ("3 of 3 files failed: 2 OSError, 1 WarcError; the first: OSError: a")
    assert [r.getMessage() for r in caplog.records] == [some, mixed]
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_a_run_that_hands_out_its_failures_only_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        line = check_failures("pages", ["HTTPStatusError: 503", "HTTPStatusError: 503"], LOG,
                              raise_all=False)
    assert line == "all 2 pages failed with HTTPStatusError; the first: HTTPStatusError: 503"
    assert [r.getMessage() for r in caplog.records] == [line]
