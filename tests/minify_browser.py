"""What a browser renders of a page and of its minified form, compared in headless Chromium (used
by tests/test_minify_chromium.py and benchmarks/bench_minify.py).

:func:`compare_in_chromium` serves each pair (original, minified) from an HTTP server on
127.0.0.1 (a port from the OS) at the same URL but for the query (so relative URLs resolve
alike), with ``Content-Security-Policy: script-src 'none'`` (scripts off, while the parser reads
``<noscript>`` as a scripting browser does) and loads every page in an ``<iframe>`` of one
harness page (1000x800 CSS pixels each), all in one Chromium process (``--dump-dom``: the
harness writes its verdict into its DOM after the load event, which waits for every frame).
No network: every host name but 127.0.0.1 resolves to nothing.  For each pair it compares:

* ``document.compatMode`` (quirks mode);
* the DOM, after the normalisations the minifier is allowed: comments left out; attributes as
  the browser reads them (a boolean attribute whose value is its name, on an element where it
  is boolean, as present; a ``type`` that reads as missing left out: a script's that, stripped,
  is a JavaScript MIME type essence with no non-empty ``language``, a style's exactly
  ``text/css``, a stylesheet link's exactly ``text/css``); text outside ``<pre>``,
  ``<textarea>``, raw text elements and foreign content with runs of white space as one space,
  trimmed, and white-space-only text left out (what that white space meant to the rendering
  is what the next two checks compare); ``<script>`` text when the minifier minified scripts
  (scripts are off: what they hold is compared by the tree oracles);
* ``document.styleSheets``: the count, and of each sheet its owner, media, ``disabled`` and
  every rule's ``cssText``;
* ``getComputedStyle`` of every element (every property), in document order, with every CSS
  and SVG animation paused at its start (mid-animation values depend on the time);
* ``document.body.innerText``.

It returns, per pair, the list of differences found (at most a few of each kind), or an empty
list when everything is equal.
"""

from __future__ import annotations

import html as html_module
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

#: The harness's comparison, run after the load event (every frame loaded).
COMPARE = r"""
const PRESERVE = new Set(["pre", "listing", "textarea", "script", "style", "title", "xmp",
  "iframe", "noembed", "noframes", "plaintext", "noscript"]);
const BOOLEAN = {allowfullscreen: "iframe", async: "script", autofocus: "*",
  autoplay: "audio video", checked: "input", controls: "audio video", default: "track",
  defer: "script", disabled: "button fieldset input link optgroup option select textarea",
  formnovalidate: "button input", inert: "*", ismap: "img", itemscope: "*",
  loop: "audio video", multiple: "input select", muted: "audio video", nomodule: "script",
  novalidate: "form", open: "details dialog", playsinline: "video",
  readonly: "input textarea", required: "input select textarea", reversed: "ol",
  selected: "option", shadowrootclonable: "template", shadowrootdelegatesfocus: "template",
  shadowrootserializable: "template"};
const JS = new Set(["application/ecmascript", "application/javascript",
  "application/x-ecmascript", "application/x-javascript", "text/ecmascript", "text/javascript",
  "text/javascript1.0", "text/javascript1.1", "text/javascript1.2", "text/javascript1.3",
  "text/javascript1.4", "text/javascript1.5", "text/jscript", "text/livescript",
  "text/x-ecmascript", "text/x-javascript"]);
const HTML_NS = "http://www.w3.org/1999/xhtml";
const ascii = (s) => /^[\x00-\x7f]*$/.test(s);
const strip = (s) => s.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, "");
function attrs(el) {
  const html = el.namespaceURI === HTML_NS, name = el.localName;
  const out = {};
  for (const a of el.attributes) out[(a.namespaceURI || "") + " " + a.name] = a.value;
  if (!html) return out;
  for (const key of Object.keys(out)) {
    const local = key.slice(1), on = BOOLEAN[local];
    if (on && (on === "*" || on.split(" ").includes(name)) && out[key].toLowerCase() === local)
      out[key] = "";
  }
  const t = out[" type"];
  if (t !== undefined && ascii(t)) {
    const rel = out[" rel"];
    if ((name === "script" && JS.has(strip(t).toLowerCase()) && !out[" language"]) ||
        (name === "style" && t.toLowerCase() === "text/css") ||
        (name === "link" && t.toLowerCase() === "text/css" && rel !== undefined &&
         ascii(rel) && ["stylesheet", "alternate stylesheet"].includes(
           strip(rel).toLowerCase().split(/[\t\n\f\r ]+/).sort().join(" "))))
      delete out[" type"];
  }
  return out;
}
function children(node, keep, code) {
  const out = [];
  for (const c of node.childNodes) {
    if (c.nodeType === 3) {
      if (out.length && typeof out[out.length - 1] === "string") out[out.length - 1] += c.data;
      else out.push(c.data);
    } else if (c.nodeType === 1) out.push(c);
  }
  if (keep) return out;
  return out.map((c) => typeof c === "string" ? strip(c.replace(/[\t\n\f\r ]+/g, " ")) : c)
            .filter((c) => c !== "");
}
function where(el) {
  const parts = [];
  for (let e = el; e && e.nodeType === 1; e = e.parentNode) {
    let i = 0;
    for (let s = e; s.previousElementSibling; s = s.previousElementSibling) i++;
    parts.unshift(e.localName + "[" + i + "]");
  }
  return parts.join("/");
}
function domDiff(a, b, keep, code, out) {
  if (out.length >= 5) return;
  if (a.namespaceURI !== b.namespaceURI || a.localName !== b.localName) {
    out.push("dom: " + where(a) + " is <" + b.localName + "> minified"); return;
  }
  const aa = JSON.stringify(Object.entries(attrs(a)).sort());
  const ba = JSON.stringify(Object.entries(attrs(b)).sort());
  if (aa !== ba) out.push("dom: attributes of " + where(a) + ": " + aa + " / " + ba);
  const html = a.namespaceURI === HTML_NS;
  if (code && html && (a.localName === "script" || a.localName === "style")) return;
  keep = keep || !html || PRESERVE.has(a.localName);
  const ca = children(a, keep), cb = children(b, keep);
  const n = Math.max(ca.length, cb.length);
  for (let i = 0; i < n && out.length < 5; i++) {
    const x = ca[i], y = cb[i];
    if (typeof x === "string" || typeof y === "string") {
      if (x !== y) out.push("dom: text in " + where(a) + ": " + JSON.stringify(
        typeof x === "string" ? x.slice(0, 80) : x && x.localName) + " / " + JSON.stringify(
        typeof y === "string" ? y.slice(0, 80) : y && y.localName));
      continue;
    }
    if (!x || !y) { out.push("dom: children of " + where(a) + " differ in number"); break; }
    domDiff(x, y, keep, code, out);
  }
}
function sheets(doc) {
  const out = [];
  for (const s of doc.styleSheets) {
    let rules;
    try { rules = Array.from(s.cssRules, (r) => r.cssText); }
    catch (e) { rules = "(" + e.name + ")"; }
    out.push({owner: s.ownerNode ? s.ownerNode.localName : null, media: s.media.mediaText,
              disabled: s.disabled, rules: rules});
  }
  return out;
}
function styleDiff(da, db, out) {
  const ea = da.querySelectorAll("*"), eb = db.querySelectorAll("*");
  if (ea.length !== eb.length) { out.push("elements: " + ea.length + " / " + eb.length); return; }
  const wa = da.defaultView, wb = db.defaultView;
  let names = null, found = 0;
  for (let i = 0; i < ea.length && found < 5; i++) {
    const sa = wa.getComputedStyle(ea[i]), sb = wb.getComputedStyle(eb[i]);
    // (the property names, the same on most elements: custom properties add theirs)
    if (names === null || sa.length !== names.length ||
        sa[sa.length - 1] !== names[names.length - 1]) names = Array.from(sa);
    if (sb.length !== sa.length) {
      out.push("style: " + where(ea[i]) + " property count"); found++; continue;
    }
    for (const p of names) {
      const va = sa.getPropertyValue(p), vb = sb.getPropertyValue(p);
      if (va !== vb) {
        out.push("style: " + where(ea[i]) + " " + p + ": " + va.slice(0, 80) + " / " +
                 vb.slice(0, 80));
        found++;
        break;
      }
    }
  }
}
function textDiff(a, b) {
  if (a === b) return null;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return "innerText at " + i + ": " + JSON.stringify(a.slice(Math.max(0, i - 40), i + 40)) +
    " / " + JSON.stringify(b.slice(Math.max(0, i - 40), i + 40));
}
function compare(i, code) {
  const fa = document.getElementById("o" + i), fb = document.getElementById("m" + i);
  const da = fa.contentDocument, db = fb.contentDocument;
  const out = [];
  if (!da || !db) return ["not loaded"];
  for (const d of [da, db]) {
    // (animations stopped at their start: computed style mid-animation depends on the time)
    for (const a of d.getAnimations()) { a.pause(); a.currentTime = 0; }
    for (const svg of d.querySelectorAll("svg")) {
      if (svg.pauseAnimations) { svg.pauseAnimations(); svg.setCurrentTime(0); }
    }
  }
  if (da.compatMode !== db.compatMode)
    out.push("compatMode: " + da.compatMode + " / " + db.compatMode);
  domDiff(da.documentElement, db.documentElement, false, code, out);
  const sa = JSON.stringify(sheets(da)), sb = JSON.stringify(sheets(db));
  if (sa !== sb) {
    const xa = sheets(da), xb = sheets(db);
    if (xa.length !== xb.length) out.push("styleSheets: " + xa.length + " / " + xb.length);
    else for (let k = 0; k < xa.length; k++)
      if (JSON.stringify(xa[k]) !== JSON.stringify(xb[k]))
        out.push("styleSheet " + k + ": " + JSON.stringify(xa[k]).slice(0, 300) + " / " +
                 JSON.stringify(xb[k]).slice(0, 300));
  }
  styleDiff(da, db, out);
  if (da.body && db.body) {
    const t = textDiff(da.body.innerText, db.body.innerText);
    if (t) out.push(t);
  } else if (!!da.body !== !!db.body) out.push("body: one is missing");
  return out;
}
window.addEventListener("load", () => {
  const results = [];
  for (let i = 0; i < PAIRS.length; i++) {
    try { results.push(compare(i, PAIRS[i])); } catch (e) { results.push(["error: " + e]); }
  }
  const pre = document.createElement("pre");
  pre.id = "result";
  pre.textContent = JSON.stringify(results);
  document.body.appendChild(pre);
});
"""


@contextmanager
def _server(pages: dict[str, bytes]) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 (port from the OS) serving ``pages`` by path and query; the
    framed pages with scripts off (CSP).  Yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path)
            if body is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            if urlsplit(self.path).path != "/harness":
                self.send_header("Content-Security-Policy", "script-src 'none'; object-src 'none'")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def compare_in_chromium(pairs: Sequence[tuple[bytes, bytes]], profile: Path, *,
                        code: bool | Sequence[bool] = False, timeout: float = 300
                        ) -> list[list[str]]:
    """For each (original, minified) pair, the differences Chromium shows between them (see
    the module documentation); ``code`` (one for all, or one per pair): script text was
    minified (not compared)."""
    flags = [code] * len(pairs) if isinstance(code, bool) else list(code)
    assert CHROMIUM is not None
    pages: dict[str, bytes] = {}
    frames = []
    for i, (original, minified) in enumerate(pairs):
        pages[f"/page/{i}?v=o"] = original
        pages[f"/page/{i}?v=m"] = minified
        frames.append(f'<iframe id=o{i} src="/page/{i}?v=o" width=1000 height=800></iframe>'
                      f'<iframe id=m{i} src="/page/{i}?v=m" width=1000 height=800></iframe>')
    harness = ("<!DOCTYPE html><meta charset=utf-8><title>minify</title><body>"
               + "".join(frames) + "<script>const PAIRS = "
               + json.dumps(flags) + ";" + COMPARE + "</script>")
    pages["/harness"] = harness.encode("utf-8")
    with _server(pages) as base:
        res = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--mute-audio", "--hide-scrollbars",
             "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
             f"--user-data-dir={profile}", "--virtual-time-budget=30000",
             "--dump-dom", base + "/harness"],
            capture_output=True, text=True, timeout=timeout, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    start = res.stdout.find('<pre id="result">')
    assert start >= 0, (res.stdout[-2000:], res.stderr[-2000:])
    end = res.stdout.find("</pre>", start)
    results: list[list[str]] = json.loads(
        html_module.unescape(res.stdout[start + len('<pre id="result">'):end]))
    assert len(results) == len(pairs)
    return results
