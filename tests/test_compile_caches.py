"""The compile caches (issue 34): ``CompileCache`` itself, and the caches built on it -- parsed
selectors (``parse_selector``, by text and namespaces), compiled rule sets (a Rewriter's
selectors, by codec, ``<meta charset>`` rule and selector keys) and ``extract``'s field maps and
plans.  For each: equal keys share one compiled object, different namespaces or options do not,
the size is bounded, eight threads at once get one object per key, and what is built after an
eviction works like what was built before it.  A property compares rewriting with cached
compilation against compiling every selector afresh.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import htmlstream as hs
import htmlstream.extraction as extraction
import htmlstream.rewriter as rewriter_module
import htmlstream.selectors as selectors_module
from chunking import chunkings, feed_bytes
from html_strategies import html_documents
from htmlstream import CompileCache, Element, Rewriter
from htmlstream.selectors import SVG_NAMESPACE, _Parser

DOC = (b'<!doctype html><html lang=en><head><title>T</title><meta charset=utf-8></head>'
       b'<body><p class=note id=x>a <a href="/k">b</a></p><svg><rect/></svg>'
       b'<img src=i.png><div><span>s</span></div></body></html>')


def _threads(n: int, fn: Callable[[int], Any]) -> list[Any]:
    """``fn(i)`` in ``n`` threads started together; their results in order (a thread's
    exception is raised here)."""
    results: list[Any] = [None] * n
    errors: list[BaseException] = []
    start = threading.Barrier(n)

    def run(i: int) -> None:
        try:
            start.wait()
            results[i] = fn(i)
        except BaseException as exc:    # (raised below)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]
    return results


def _marker(i: int) -> Callable[[Element], None]:
    def handler(el: Element) -> None:
        el.set_attribute(f"data-r{i}", "1")
    return handler


def _rewriter(selectors: list[str], **options: Any) -> Rewriter:
    rw = Rewriter(**options)
    for i, sel in enumerate(selectors):
        rw.on(sel, element=_marker(i), namespaces={"s": SVG_NAMESPACE} if "s|" in sel else None)
    return rw


def _outputs(rw: Rewriter, data: bytes) -> set[bytes]:
    """The output of ``rw`` on ``data`` under every chunking (one, if chunking changes
    nothing)."""
    return {feed_bytes(rw.stream, chunks) for chunks in chunkings(data)}


def _program(rw: Rewriter, codec: str = "utf-8") -> object:
    return rw._compiled_rules().for_codec(codec).program


@contextmanager
def _fresh_caches() -> Iterator[None]:
    """The library's compile caches replaced by empty ones for the block (uncached
    compilation: everything built in it is built anew)."""
    saved = (selectors_module._PARSED, rewriter_module._PROGRAMS)
    selectors_module._PARSED = CompileCache(selectors_module._parse_key, maxsize=1024)
    rewriter_module._PROGRAMS = CompileCache(rewriter_module._CompiledSelectors, maxsize=1024)
    try:
        yield
    finally:
        selectors_module._PARSED, rewriter_module._PROGRAMS = saved


# --------------------------------------------------------------------------- CompileCache


class Built:
    """A value made by a build function, with the key it was made from."""

    def __init__(self, key: object) -> None:
        self.key = key


def test_equal_keys_share_one_object_different_keys_do_not() -> None:
    calls: list[object] = []

    def build(key: tuple[str, int]) -> Built:
        calls.append(key)
        return Built(key)

    cache: CompileCache[tuple[str, int], Built] = CompileCache(build, maxsize=8)
    a = cache.get(("a", 1))
    assert cache.get(("a", 1)) is a
    assert cache.get(("a", 2)) is not a
    assert calls == [("a", 1), ("a", 2)]
    assert ("a", 1) in cache and ("b", 1) not in cache and len(cache) == 2


def test_bounded_and_correct_after_eviction() -> None:
    cache: CompileCache[int, Built] = CompileCache(Built, maxsize=4)
    first = cache.get(0)
    for k in range(1, 100):
        cache.get(k)
        assert len(cache) <= 4
    assert 0 not in cache
    again = cache.get(0)            # (built anew, from the key alone)
    assert again is not first and again.key == 0
    assert cache.get(0) is again


def test_eviction_keeps_what_is_used() -> None:
    # CLOCK: an entry used since the hand last passed it gets a second chance.
    cache: CompileCache[int, Built] = CompileCache(Built, maxsize=4)
    hot = cache.get(0)
    for k in range(1, 50):
        assert cache.get(0) is hot
        cache.get(k)
    assert cache.get(0) is hot


def test_failures_are_not_cached() -> None:
    calls = 0

    def build(key: str) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ValueError("first try fails")
        return key.upper()

    cache: CompileCache[str, str] = CompileCache(build)
    with pytest.raises(ValueError, match="first try"):
        cache.get("x")
    assert "x" not in cache
    assert cache.get("x") == "X" and calls == 2


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError):
        CompileCache(Built, maxsize=0)
    with pytest.raises(TypeError):
        CompileCache(42)  # type: ignore[arg-type]
    cache: CompileCache[Any, Built] = CompileCache(Built)
    with pytest.raises(TypeError):
        cache.get(["not", "hashable"])
    cache.get(1)
    cache.clear()
    assert len(cache) == 0 and cache.maxsize == 256


def test_eight_threads_get_one_object_per_key() -> None:
    built: list[object] = []
    lock = threading.Lock()

    def build(key: int) -> Built:
        with lock:
            built.append(key)
        return Built(key)

    cache: CompileCache[int, Built] = CompileCache(build, maxsize=16)
    results = _threads(8, lambda i: [cache.get(k % 6) for k in range(i, i + 300)])
    by_key: dict[int, Built] = {}
    for values in results:
        for value in values:
            assert by_key.setdefault(value.key, value) is value   # one object per key
    assert sorted(by_key) == list(range(6)) and len(cache) == 6


def test_eight_threads_with_evictions() -> None:
    cache: CompileCache[int, Built] = CompileCache(Built, maxsize=5)

    def work(i: int) -> None:
        for k in range(400):
            key = (k * (i + 1)) % 23
            assert cache.get(key).key == key
            assert len(cache) <= 5

    _threads(8, work)


# --------------------------------------------------------------------------- selectors


def test_parsed_selectors_are_shared_by_text_and_namespaces() -> None:
    a = hs.parse_selector("p.note > a[href]")
    assert hs.parse_selector("p.note > a[href]") is a
    svg = hs.parse_selector("s|rect", {"s": SVG_NAMESPACE})
    assert hs.parse_selector("s|rect", {"s": SVG_NAMESPACE}) is svg    # an equal new dict
    other = hs.parse_selector("s|rect", {"s": "urn:other"})
    assert other is not svg and other != svg
    default = hs.parse_selector("rect", {"": SVG_NAMESPACE})
    assert default is not hs.parse_selector("rect") and default != hs.parse_selector("rect")
    # (an empty mapping is no namespaces at all)
    assert hs.parse_selector("p.note > a[href]", {}) is a


def test_selector_errors_are_not_cached_and_checked_each_time() -> None:
    for _ in range(2):
        with pytest.raises(hs.SelectorError):
            hs.parse_selector("a:has(b)")
        with pytest.raises(TypeError):
            hs.parse_selector("a", {"x": 1})  # type: ignore[dict-item]
        with pytest.raises(TypeError):
            hs.parse_selector("a", [("x", "y")])  # type: ignore[arg-type]
    with pytest.raises(hs.SelectorError):
        Rewriter().on("a:has(b)", element=lambda el: None)


def test_the_parse_cache_is_bounded() -> None:
    cache = selectors_module._PARSED
    for i in range(cache.maxsize + 50):
        hs.parse_selector(f".c{i}")
    assert len(cache) <= cache.maxsize


# --------------------------------------------------------------------------- rule sets


def test_rewriters_with_the_same_rules_share_the_compiled_selectors() -> None:
    sels = ["a[href]", "img", "p.note", "s|rect"]
    one, two = _rewriter(sels), _rewriter(sels)
    assert _program(one) is _program(two)
    # (another codec, at a <meta charset> switch: shared too)
    assert _program(one, "cp1252") is _program(two, "cp1252")
    assert _program(one, "cp1252") is not _program(one)
    assert _outputs(one, DOC) == _outputs(two, DOC) == {
        DOC.replace(b'<a href="/k">', b'<a href="/k" data-r0="1">')
        .replace(b"<img src=i.png>", b'<img src=i.png data-r1="1">')
        .replace(b"<p class=note id=x>", b'<p class=note id=x data-r2="1">')
        .replace(b"<rect/>", b'<rect data-r3="1"/>')}


def test_different_rules_namespaces_or_options_do_not_share() -> None:
    base = _program(_rewriter(["a", "rect"]))
    assert _program(_rewriter(["rect", "a"])) is not base          # rule order
    assert _program(_rewriter(["a"])) is not base
    with_ns = Rewriter().on("a", element=_marker(0)).on(
        "rect", element=_marker(1), namespaces={"": SVG_NAMESPACE})
    assert _program(with_ns) is not base
    meta = _rewriter(["a", "rect"], adjust_charset_on_meta_tag=True)
    assert _program(meta) is not base
    latin = _rewriter(["a", "rect"], encoding="windows-1252")
    assert _program(latin, "cp1252") is not base
    assert _program(latin, "utf-8") is base     # (the same rule set and codec: shared)


def test_handlers_stay_each_rewriters_own() -> None:
    one = Rewriter().on("p", element=lambda el: el.set_attribute("by", "one"))
    two = Rewriter().on("p", element=lambda el: el.set_attribute("by", "two"))
    assert _program(one) is _program(two)
    assert _outputs(one, b"<p>x</p>") == {b'<p by="one">x</p>'}
    assert _outputs(two, b"<p>x</p>") == {b'<p by="two">x</p>'}


def test_rule_sets_work_after_eviction(monkeypatch: pytest.MonkeyPatch) -> None:
    # A cache of two rule sets, cleared of the parsed selectors too: every rewriter below
    # compiles after evictions, and must rewrite as the first one of its rules did.
    monkeypatch.setattr(rewriter_module, "_PROGRAMS",
                        CompileCache(rewriter_module._CompiledSelectors, maxsize=2))
    sets = [["a[href]"], ["img", "p"], ["div span", "#x"], ["s|rect"], [".note", "a"]]
    want = [_outputs(_rewriter(sels), DOC) for sels in sets]
    old = [_rewriter(sels) for sels in sets]
    for _ in range(3):
        selectors_module._PARSED.clear()
        for sels, expected, rw in zip(sets, want, old, strict=True):
            assert _outputs(_rewriter(sels), DOC) == expected
            assert _outputs(rw, DOC) == expected        # (what was handed out stays valid)
            assert len(rewriter_module._PROGRAMS) <= 2


def test_rule_sets_under_eight_threads() -> None:
    sets = [["a[href]", "img"], ["p.note"], ["div > span", "s|rect"], ["*"]]
    want = [_outputs(_rewriter(sels), DOC) for sels in sets]

    def work(i: int) -> list[object]:
        programs = []
        for k in range(12):
            j = (i + k) % len(sets)
            rw = _rewriter(sets[j])
            assert _outputs(rw, DOC) == want[j]
            programs.append((j, _program(rw)))
        return programs

    shared: dict[int, object] = {}
    for programs in _threads(8, work):
        for j, program in programs:
            assert shared.setdefault(j, program) is program


def test_rules_added_later_recompile() -> None:
    rw = Rewriter().on("a", element=_marker(0))
    first = _program(rw)
    assert _outputs(rw, b"<a>x</a><p>y</p>") == {b'<a data-r0="1">x</a><p>y</p>'}
    rw.on("p", element=_marker(1))
    assert _program(rw) is not first
    assert _outputs(rw, b"<a>x</a><p>y</p>") == {b'<a data-r0="1">x</a><p data-r1="1">y</p>'}


# --------------------------------------------------------------------------- extract


def test_equal_field_maps_share_one_plan() -> None:
    fields = {"title": "title::text", "href": "a::attr(href)", "imgs": "img::attr(src)*"}
    one = hs.Extractor(dict(fields))
    two = hs.Extractor({k: v for k, v in fields.items()})
    assert one._doc.plan is two._doc.plan
    as_fields = hs.Extractor({"title": hs.Field("title"), "href": "a::attr(href)",
                              "imgs": "img::attr(src)*"})
    assert as_fields._doc.plan is one._doc.plan     # (equal Fields, as parsed from the specs)
    reordered = hs.Extractor(dict(reversed(fields.items())))
    assert list(reordered.fields) == list(reversed(fields))
    assert hs.Extractor(fields, scripting=False)._doc.plan is not one._doc.plan
    assert hs.Extractor(fields, encoding="utf-8")._doc.plan is not one._doc.plan
    for chunks in chunkings(DOC):
        assert hs.extract(iter(chunks), dict(fields)) == {
            "title": "T", "href": "/k", "imgs": ["i.png"]}


def test_field_map_errors_and_odd_maps() -> None:
    for _ in range(2):
        with pytest.raises(hs.SelectorError):
            hs.extract(DOC, {"x": "a:has(b)::text"})
        with pytest.raises(TypeError):
            hs.extract(DOC, {"x": 42})  # type: ignore[dict-item]

    class Spec(str):
        pass

    # (a str subclass: parsed uncached, same result)
    assert hs.extract(DOC, {"t": Spec("title::text")}) == {"t": "T"}


def test_the_extract_caches_are_bounded_and_threadsafe() -> None:
    for i in range(extraction._FIELD_MAPS.maxsize + 10):
        hs.Extractor({"v": f".c{i}::text"})
    assert len(extraction._FIELD_MAPS) <= extraction._FIELD_MAPS.maxsize
    assert len(extraction._PLANS) <= extraction._PLANS.maxsize

    def work(i: int) -> list[dict[str, Any]]:
        return [hs.extract(DOC, {"title": "title::text", "n": f"{tag}::text"})
                for tag in ("p", "a", "span") * 10]

    for records in _threads(8, work):
        assert records[:3] == [{"title": "T", "n": "a b"}, {"title": "T", "n": "b"},
                               {"title": "T", "n": "s"}]


# --------------------------------------------------------------------------- property

SELECTORS = ["div", "span", "a", "p", "*", "[class]", ".c1", "#i1", "div > span", "div p",
             "li:nth-child(2)", "span:not(.c1)", "p:first-of-type", "body *", "[data-x='1']",
             "s|rect", "svg *", "a[href^='/']", "p, a"]


@given(data=html_documents(max_size=12),
       sels=st.lists(st.sampled_from(SELECTORS), min_size=1, max_size=4),
       meta=st.booleans())
def test_cached_compilation_matches_compiling_afresh(data: bytes, sels: list[str],
                                                     meta: bool) -> None:
    for sel in sels:
        ns = {"s": SVG_NAMESPACE} if "s|" in sel else {}
        assert hs.parse_selector(sel, ns or None) == _Parser(sel, ns).parse()
    _rewriter(sels, adjust_charset_on_meta_tag=meta)._compiled_rules()    # (warm)
    cached = _rewriter(sels, adjust_charset_on_meta_tag=meta)
    with _fresh_caches():
        fresh = _rewriter(sels, adjust_charset_on_meta_tag=meta)
        fresh._compiled_rules()
        fresh_program = _program(fresh)
    assert _program(cached) is not fresh_program
    for chunks in chunkings(data, random_splits=3):
        assert feed_bytes(cached.stream, chunks) == feed_bytes(fresh.stream, chunks)
