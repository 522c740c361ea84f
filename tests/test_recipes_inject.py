"""recipes.inject: each snippet once, where the tree builder puts the head and body, with tags
or without, in every chunking; recipes.csp_nonce: the nonce on elements, on what inject
inserts, in a CSP <meta>, prepared by an integration; the recipes together and with user
handlers in one pass; interleaved streams."""

from __future__ import annotations

import itertools

import pytest

from htmlstream import Rewriter, recipes
from htmlstream.recipes.csp import merge_policy, prepare, with_nonce
from recipe_checks import corpus, rewrite_all

HS, HE, BS, BE = "<!--HS-->", "<!--HE-->", "<!--BS-->", "<!--BE-->"
ALL = {"head_start": HS, "head_end": HE, "body_start": BS, "body_end": BE}


def injected(doc: str, **points: str) -> str:
    rw = Rewriter().use(recipes.inject(**(points or ALL)))
    return rewrite_all(rw, doc)[0].decode("utf-8")


@pytest.mark.parametrize(("doc", "expected"), [
    ("<!DOCTYPE html><html><head><title>t</title></head><body><p>x</p></body></html>",
     f"<!DOCTYPE html><html><head>{HS}<title>t</title>{HE}</head><body>{BS}<p>x</p>{BE}"
     "</body></html>"),
    # no </head>, no <body>: the head ends and the body begins at the first body element
    ("<html><head><title>t</title><div>d</div></html>",
     f"<html><head>{HS}<title>t</title>{HE}{BS}<div>d</div>{BE}</html>"),
    # no <head> tag
    ("<!doctype html><title>t</title><meta charset=utf-8><p>x</p>",
     f"<!doctype html>{HS}<title>t</title><meta charset=utf-8>{HE}{BS}<p>x</p>{BE}"),
    ("<p>x", f"{HS}{HE}{BS}<p>x{BE}"),
    ("<body class=b>x</body>", f"{HS}{HE}<body class=b>{BS}x{BE}</body>"),
    ("<head></head><body></body>", f"<head>{HS}{HE}</head><body>{BS}{BE}</body>"),
    # </body> missing: the end of the input
    ("<body><p>x", f"{HS}{HE}<body>{BS}<p>x{BE}"),
    # </head> then head content, then the body
    ("<head><title>t</title></head>\n<link rel=x><div>d</div>",
     f"<head>{HS}<title>t</title>{HE}</head>\n<link rel=x>{BS}<div>d</div>{BE}"),
    # template and foreign content
    ("<template><p>x</p></template><svg><p>y</p></svg>",
     f"{HS}<template><p>x</p></template>{HE}{BS}<svg><p>y</p></svg>{BE}"),
    ("<svg><circle/></svg>", f"{HS}{HE}{BS}<svg><circle/></svg>{BE}"),
    ("<!-- c --><html><!-- d --><body>x", f"<!-- c --><html><!-- d -->{HS}{HE}<body>{BS}x{BE}"),
    # no element at all: everything at the end, in order
    ("", f"{HS}{HE}{BS}{BE}"),
    ("<!doctype html>", f"<!doctype html>{HS}{HE}{BS}{BE}"),
    # text begins the body: at its first character that is not white space (the implied
    # <body>; before the engine's implied=True, the first element after the text)
    ("<head><title>t</title>hello <b>x</b>",
     f"<head>{HS}<title>t</title>{HE}{BS}hello <b>x</b>{BE}"),
    ("<head><title>t</title>\n  hello <b>x</b>",
     f"<head>{HS}<title>t</title>\n  {HE}{BS}hello <b>x</b>{BE}"),
    # a frameset document has no body: body_start and body_end at the end
    ("<frameset><frame></frameset>", f"{HS}{HE}<frameset><frame></frameset>{BS}{BE}"),
    # <html>/<body>/<head> tags in a <template> are ignored by the tree builder: no point there
    ("<template><body>", f"{HS}<template><body>{HE}{BS}{BE}"),
    ("<template><html>", f"{HS}<template><html>{HE}{BS}{BE}"),
    ("<html><template><html lang=x></template>",
     f"<html>{HS}<template><html lang=x></template>{HE}{BS}{BE}"),
    ("<body><template><body class=x></template>x</body>",
     f"{HS}{HE}<body>{BS}<template><body class=x></template>x{BE}</body>"),
    # a second <head> or <body> tag inserts nothing more
    ("<head></head><head></head><body><body>x</body>",
     f"<head>{HS}{HE}</head><head></head><body>{BS}<body>x{BE}</body>"),
])
def test_points(doc: str, expected: str) -> None:
    assert injected(doc) == expected


def test_only_some_points() -> None:
    assert injected("<p>x", body_end=BE) == f"<p>x{BE}"
    assert injected("<title>t</title><p>x", head_end=HE) == f"<title>t</title>{HE}<p>x"
    assert Rewriter().use(recipes.inject()).rewrite("<p>x") == "<p>x"
    with pytest.raises(TypeError):
        recipes.inject(head_end=b"<x>")  # type: ignore[arg-type]


MERGED = "<html><head><div>d</div></head><body class=a>x</body></html>"


def test_merged_body_start_and_head() -> None:
    # The body begins at <div> (the <body> tag comes later and merges into it).
    out = injected(MERGED, head_start=HS, head_end=HE, body_start=BS)
    assert out == f"<html><head>{HS}{HE}{BS}<div>d</div></head><body class=a>x</body></html>"


def test_merged_body_end() -> None:
    out = injected(MERGED, body_end=BE)
    assert out == f"<html><head><div>d</div></head><body class=a>x{BE}</body></html>"


def test_merged_body_sees_content() -> None:
    seen: list[str] = []
    rw = Rewriter().use(recipes.inject(body_end=BE)).on(
        "body", text=lambda t: seen.append(t.text))
    rw.rewrite("<p>a</p><body class=a>b</body>")
    assert "".join(seen) == "ab"


@pytest.mark.parametrize("path", corpus(), ids=lambda p: p.name)
def test_corpus_each_once(path: object) -> None:
    data = path.read_bytes()  # type: ignore[attr-defined]
    rw = Rewriter().use(recipes.inject(**ALL))
    out, _ = rewrite_all(rw, data, single_bytes=False, random_splits=3)
    text = out.decode("utf-8", "replace")
    positions = [text.index(m) for m in (HS, HE, BS, BE)]
    assert all(text.count(m) == 1 for m in (HS, HE, BS, BE))
    assert positions == sorted(positions)
    assert len(out) == len(data) + sum(map(len, (HS, HE, BS, BE)))


# --------------------------------------------------------------------------- csp_nonce


def counter_nonce() -> object:
    numbers = itertools.count()
    return lambda: f"n{next(numbers)}"


def test_nonce_on_selected_elements_and_inserted_scripts() -> None:
    rw = Rewriter().use(
        recipes.csp_nonce(nonce="abc"),
        recipes.inject(head_end="<script>a()</script><style>b{}</style><p>x</p>",
                       body_end='<script nonce="own">c()</script>'),
    )
    out, ctx = rewrite_all(rw, "<title>t</title><script>x</script><style>y</style>"
                               "<script nonce=keep></script><p>z")
    assert out.decode() == (
        '<title>t</title><script nonce="abc">x</script><style nonce="abc">y</style>'
        '<script nonce=keep></script><script nonce="abc">a()</script><style nonce="abc">b{}'
        '</style><p>x</p><p>z<script nonce="own">c()</script>')
    assert ctx["csp_nonce"] == "abc"


def test_fresh_nonce_per_document() -> None:
    rw = Rewriter().use(recipes.csp_nonce())
    nonces = set()
    for _ in range(20):
        ctx: dict[str, object] = {}
        out = rw.rewrite("<script></script>", context=ctx)
        nonce = ctx["csp_nonce"]
        assert isinstance(nonce, str) and len(nonce) >= 22
        assert out == f'<script nonce="{nonce}"></script>'
        nonces.add(nonce)
    assert len(nonces) == 20
    # A document with no element gets one too.
    ctx = {}
    rw.rewrite("text", context=ctx)
    assert isinstance(ctx["csp_nonce"], str)


def test_seeded_nonce_in_every_chunking() -> None:
    recipe = recipes.csp_nonce(nonce=lambda: "seeded")
    rw = Rewriter().use(recipe, recipes.inject(body_end="<script>z</script>"))
    out, ctx = rewrite_all(rw, "<p>a<script>b</script><svg><script>c</script><style>d</style>"
                               "</svg><template><script>e</script></template>")
    assert out.count(b'nonce="seeded"') == 5
    assert ctx["csp_nonce"] == "seeded"


def test_prepared_context_from_an_integration() -> None:
    recipe = recipes.csp_nonce()
    rw = Rewriter().use(recipe)
    ctx = recipe.prepare()
    nonce = ctx["csp_nonce"]
    header = f"script-src 'nonce-{nonce}'"     # what the integration sends first
    out = rw.rewrite(b"<script></script>", context=ctx)
    assert out == f'<script nonce="{nonce}"></script>'.encode()
    assert header.endswith(f"'nonce-{ctx['csp_nonce']}'")
    assert prepare({"csp_nonce": "given"})["csp_nonce"] == "given"
    with pytest.raises(ValueError):
        prepare(nonce="bad nonce")


def test_select_narrows() -> None:
    rw = Rewriter().use(recipes.csp_nonce(nonce="k", select="head script"))
    out = rw.rewrite("<head><script>1</script></head><body><script>2</script><style>s</style>")
    assert out == ('<head><script nonce="k">1</script></head><body><script>2</script>'
                   "<style>s</style>")


@pytest.mark.parametrize(("policy", "expected"), [
    ("script-src 'self'", "script-src 'self' 'nonce-N'"),
    ("default-src 'self'; img-src *", "default-src 'self' 'nonce-N'; img-src *"),
    ("script-src 'self'; style-src 'self' ", "script-src 'self' 'nonce-N'; style-src 'self' "
     "'nonce-N' "),
    ("script-src 'unsafe-inline'", "script-src 'unsafe-inline'"),
    ("style-src 'none'; script-src https:", "style-src 'none'; script-src https: 'nonce-N'"),
    ("img-src *", "img-src *"),
    ("SCRIPT-SRC 'self'; script-src-elem x", "SCRIPT-SRC 'self' 'nonce-N'; script-src-elem x "
     "'nonce-N'"),
])
def test_merge_policy(policy: str, expected: str) -> None:
    assert merge_policy(policy, "N") == expected


def test_csp_meta_merged() -> None:
    rw = Rewriter().use(recipes.csp_nonce(nonce="N"))
    doc = ('<meta http-equiv="content-security-policy" content="script-src \'self\'">'
           '<meta http-equiv=refresh content=5><script></script>')
    out, _ = rewrite_all(rw, doc)
    assert out.decode() == ('<meta http-equiv="content-security-policy" content="script-src '
                            '\'self\' \'nonce-N\'"><meta http-equiv=refresh content=5>'
                            '<script nonce="N"></script>')


def test_with_nonce() -> None:
    assert with_nonce("<script>x</script>", None) == "<script>x</script>"
    assert with_nonce("<script>x</script><p>", "n") == '<script nonce="n">x</script><p>'
    assert with_nonce("plain", "n") == "plain"


# --------------------------------------------------------------------------- together


DOC = ("<!doctype html><html><head><title>t</title>"
       '<meta http-equiv="Content-Security-Policy" content="default-src \'self\' https:">'
       '<style>a{b:url(http://example.com/x.png)}</style></head>'
       '<body><img src="http://example.com/i.png"><script src="http://example.com/s.js">'
       "</script><p>text</p></body></html>")


def combined() -> Rewriter:
    seen: list[str] = []
    rw = Rewriter().use(
        recipes.csp_nonce(nonce=lambda: "N"),
        recipes.inject(head_end="<script>h()</script>", body_end="<script>b()</script>"),
        recipes.https_upgrade(["example.com"], hsts_preload=False,
                              upgrade_insecure_requests=True),
    )
    rw.on("p", element=lambda el: el.set_attribute("class", "user"))
    rw.on("img", element=lambda el: seen.append(el.get_attribute("src") or ""))
    return rw


def test_all_together_with_user_handlers() -> None:
    out, ctx = rewrite_all(combined(), DOC)
    assert out.decode() == (
        "<!doctype html><html><head>"
        '<meta http-equiv="Content-Security-Policy" content="upgrade-insecure-requests">'
        "<title>t</title>"
        '<meta http-equiv="Content-Security-Policy" content="default-src \'self\' https: '
        "'nonce-N'\">"
        '<style nonce="N">a{b:url(https://example.com/x.png)}</style>'
        '<script nonce="N">h()</script></head>'
        '<body><img src="https://example.com/i.png"><script src="https://example.com/s.js" '
        'nonce="N"></script><p class="user">text</p><script nonce="N">b()</script></body>'
        "</html>")
    assert ctx["https_upgrade"].upgraded == {"example.com": 3}


def test_interleaved_streams_keep_their_contexts() -> None:
    rw = Rewriter().use(recipes.csp_nonce(), recipes.inject(body_end="<script>b()</script>"),
                        recipes.https_upgrade(["example.com"], hsts_preload=False))
    docs = [DOC.encode(), b"<p>x<style>u{v:url(http://example.com/a)}</style>",
            b"<body><img src='http://evil.org/'></body>"]
    streams = [rw.stream() for _ in docs]
    outs = [b"" for _ in docs]
    for i in range(max(map(len, docs))):
        for k, (doc, stream) in enumerate(zip(docs, streams, strict=True)):
            if i < len(doc):
                outs[k] += stream.feed(doc[i:i + 1])
    outs = [out + s.close() for out, s in zip(outs, streams, strict=True)]
    nonces = [s.context["csp_nonce"] for s in streams]
    assert len(set(nonces)) == 3
    for k, (doc, out) in enumerate(zip(docs, outs, strict=True)):
        ctx = {"csp_nonce": nonces[k]}
        assert out == rw.rewrite(doc, context=ctx)
        assert out.count(f'nonce="{nonces[k]}"'.encode()) >= 1
    assert streams[2].context["https_upgrade"].left == {"evil.org": 1}
    assert streams[1].context["https_upgrade"].upgraded == {"example.com": 1}
