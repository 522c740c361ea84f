"""Checks of the sanitizer's output (tests/test_recipes_sanitize.py, the hypothesis properties and
the fuzz target): parsed by html5lib, the output holds no element, attribute, URL scheme or
comment the policy does not allow, it closes what it opens, and sanitizing it again changes
nothing."""

from __future__ import annotations

import re
from typing import Any

import html5lib

from htmlstream import Policy, sanitize
from htmlstream.recipes.sanitize import MATHML_ELEMENTS, SVG_ELEMENTS, URL_ATTRIBUTES

SVG = "http://www.w3.org/2000/svg"
MATHML = "http://www.w3.org/1998/Math/MathML"
#: Names of elements that exist in HTML too.
_SHARED = {"a", "font", "image", "script", "style", "title"}

HTML = "{http://www.w3.org/1999/xhtml}"
#: What html5lib makes of a document whatever its content.
STRUCTURE = {"html", "head", "body"}
_TAIL = '<b id="htmlstream-tail">tail</b>'
_C0_SPACE = "".join(chr(c) for c in range(0x21))
_URL_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*(?=:)")


def url_scheme(value: str) -> str | None:
    """The scheme of the URL ``value`` as the URL Standard's parser reads it (written here again,
    independently of the recipe's own reading): leading and trailing C0 controls and spaces
    stripped, ASCII tabs and newlines removed, ASCII case folded; ``None`` if relative."""
    value = re.sub(r"[\t\n\r]", "", value.strip(_C0_SPACE))
    match = _URL_SCHEME.match(value)
    return None if match is None else match.group(0).lower()


def _url_allowed(policy: Policy, value: str) -> bool:
    scheme = url_scheme(value)
    if scheme is not None:
        return scheme in policy.url_schemes
    # relative: kept as written, unless denied or rewritten (then absolute)
    return policy.relative == "pass_through" or callable(policy.relative)


def _candidate_urls(value: str) -> list[str]:
    """The URLs of a ``srcset`` as the HTML Standard's algorithm for parsing a srcset attribute
    reads them: each candidate's URL runs to white space (trailing commas removed), and its
    descriptors to the next comma outside parentheses."""
    urls, i, n, space = [], 0, len(value), " \t\n\r\f"
    while True:
        while i < n and value[i] in space + ",":
            i += 1
        if i >= n:
            return urls
        start = i
        while i < n and value[i] not in space:
            i += 1
        url = value[start:i]
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            depth = 0
            while i < n and not (value[i] == "," and depth == 0):
                depth = depth + 1 if value[i] == "(" else max(0, depth - (value[i] == ")"))
                i += 1
        urls.append(url)


def _local(tag: str) -> tuple[str, str]:
    if tag.startswith("{"):
        ns, _, name = tag[1:].partition("}")
        return ns, name
    return "", tag


_CSS_BAD = re.compile(r"url|expression|javascript|vbscript|behavior|binding|@import|/\*|\\|<|&|:",
                      re.IGNORECASE)


def _style_allowed(policy: Policy, value: str) -> bool:
    """A kept style attribute: declarations of allowed properties, with nothing in their
    values that could load or run anything (checked apart from the sanitizer's own filter)."""
    for declaration in value.split(";"):
        if not declaration.strip():
            continue
        name, colon, val = declaration.partition(":")
        prop = name.strip().lower()
        if not colon or (policy.style_properties is not None
                         and prop not in policy.style_properties):
            return False
        if _CSS_BAD.search(val.replace("!important", "")) or not val.strip():
            return False
    return True


def _attribute_allowed(policy: Policy, tag: str, name: str, value: str) -> bool:
    lname = name.lower()
    if lname.startswith("on"):
        return False
    if policy.link_rel is not None and tag == "a" and lname == "rel":
        return value == policy.link_rel
    if lname in policy.set_attributes.get(tag, {}):
        return True
    names = policy.attributes.get("*", frozenset()) | policy.attributes.get(tag, frozenset())
    everywhere = policy.style_properties is not None and not any(
        "style" in n for n in policy.attributes.values())
    if lname == "style" and (everywhere or "style" in names):
        return _style_allowed(policy, value)
    if lname == "class" and tag in policy.allowed_classes:
        return bool(value.split()) and all(c in policy.allowed_classes[tag]
                                          for c in value.split())
    if lname in policy.tag_attribute_values.get(tag, {}):
        return value.lower() in policy.tag_attribute_values[tag][lname]
    if lname not in names and not any(n.endswith("*") and lname.startswith(n[:-1])
                                      for n in names):
        return False
    if lname == "id" and policy.id_prefix is not None and policy.attribute_filter is None:
        return value.startswith(policy.id_prefix)
    if lname in URL_ATTRIBUTES:
        return _url_allowed(policy, value)
    if lname == "ping":
        return all(_url_allowed(policy, url) for url in value.split())
    if lname in ("srcset", "imagesrcset"):
        return all(_url_allowed(policy, url) for url in _candidate_urls(value))
    return True


def violations(html: str, policy: Policy) -> list[str]:
    """What in ``html``, parsed by html5lib as a document, the policy does not allow."""
    problems: list[str] = []
    doc = html5lib.parse(html, treebuilder="etree", namespaceHTMLElements=True)
    for el in doc.iter():
        tag = el.tag
        if not isinstance(tag, str):            # a comment (html5lib's etree: a function)
            if not policy.allow_comments:
                problems.append(f"comment {el.text!r}")
            continue
        ns, name = _local(tag)
        if ns == HTML[1:-1] and name in STRUCTURE:
            if el.attrib:
                problems.append(f"<{name}> with {dict(el.attrib)}")
            continue
        key = name.lower()
        # (an SVG or MathML name counts only in its namespace, an HTML one only in HTML)
        allowed = key in policy.tags and (
            key in SVG_ELEMENTS if ns == SVG else key in MATHML_ELEMENTS if ns == MATHML
            else key in _SHARED or key not in SVG_ELEMENTS | MATHML_ELEMENTS)
        if not allowed:
            problems.append(f"element <{name}> ({ns})")
            continue
        for attr, value in el.attrib.items():
            aname = _local(attr)[1] if attr.startswith("{") else attr
            if attr.startswith("{http://www.w3.org/1999/xlink}"):
                aname = "xlink:" + aname
            if not _attribute_allowed(policy, key, aname, value):
                problems.append(f"<{name} {aname}={value!r}>")
    return problems


def check(source: str, policy: Policy | None = None) -> str:
    """Sanitize ``source`` and assert everything the sanitizer promises; returns the output."""
    policy = Policy() if policy is None else policy
    out = sanitize(source, policy)
    problems = violations(out, policy)
    assert not problems, (source, out, problems)
    # closed: what follows the output is read as it would be alone
    tail = html5lib.parse(out + _TAIL, treebuilder="etree", namespaceHTMLElements=False)
    found = [el for el in tail.iter() if isinstance(el.tag, str)
             and el.get("id") == "htmlstream-tail"]
    assert found and found[0].tag == "b" and "".join(found[0].itertext()) == "tail", (source, out)
    again = sanitize(out, policy)
    assert again == out, ("not idempotent", source, out, again)
    return out


def tree(html: str) -> Any:
    """html5lib's tree of ``html`` as nested tuples, for comparing outputs."""
    # (a document's body, not parseFragment: html5lib's fragments lose fostered nodes)
    doc = html5lib.parse(html, treebuilder="etree", namespaceHTMLElements=False).find("body")

    def walk(el: Any) -> Any:
        return (el.tag if isinstance(el.tag, str) else "#comment", sorted(el.attrib.items()),
                re.sub(r"\s+", " ", el.text or ""),
                [walk(c) for c in el], re.sub(r"\s+", " ", el.tail or ""))
    return walk(doc)
