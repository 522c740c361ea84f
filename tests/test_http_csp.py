"""htmlstream.http.add_csp_nonce and csp_nonce_hook: the integrations' default headers hook."""

from __future__ import annotations

import pytest

from htmlstream.http import add_csp_nonce, csp_nonce_hook

CSP = "Content-Security-Policy"


@pytest.mark.parametrize(("policy", "expected"), [
    ("script-src 'self'", "script-src 'self' 'nonce-abc'"),
    ("default-src 'self'; img-src *",
     "default-src 'self'; img-src *; script-src 'self' 'nonce-abc'"),
    ("default-src 'none'", "default-src 'none'; script-src 'nonce-abc'"),
    ("script-src 'NONE'", "script-src 'nonce-abc'"),
    ("img-src *", "img-src *"),                                   # scripts not restricted
    ("script-src 'self' 'nonce-abc'", "script-src 'self' 'nonce-abc'"),        # already there
    ("SCRIPT-SRC 'self'; script-src-elem https:",
     "SCRIPT-SRC 'self' 'nonce-abc'; script-src-elem https: 'nonce-abc'"),
    ("script-src 'self', img-src *; default-src https:",                  # two policies
     "script-src 'self' 'nonce-abc', img-src *; default-src https:; script-src https: 'nonce-abc'"),
    ("script-src 'self';", "script-src 'self' 'nonce-abc'"),
])
def test_add_csp_nonce(policy: str, expected: str) -> None:
    assert add_csp_nonce([(CSP, policy)], "abc") == [(CSP, expected)]
    assert add_csp_nonce([(CSP.lower().encode(), policy.encode())], "abc") == [
        (CSP.lower().encode(), expected.encode())]


def test_fields_and_nonces() -> None:
    headers = [("Content-Type", "text/html"), (CSP + "-Report-Only", "script-src 'none'"),
               ("X-CSP", "script-src 'none'")]
    assert add_csp_nonce(headers, "a+b/c=") == [
        ("Content-Type", "text/html"), (CSP + "-Report-Only", "script-src 'nonce-a+b/c='"),
        ("X-CSP", "script-src 'none'")]
    for bad in ("", "a b", "x'; script-src *"):
        with pytest.raises(ValueError, match="nonce"):
            add_csp_nonce(headers, bad)


def test_hook() -> None:
    headers = [(CSP, "script-src 'self'")]
    assert csp_nonce_hook(None, headers) is headers
    assert csp_nonce_hook({}, headers) is headers
    assert csp_nonce_hook({"csp_nonce": "n1"}, headers) == [(CSP, "script-src 'self' 'nonce-n1'")]
