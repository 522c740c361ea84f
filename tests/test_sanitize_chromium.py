"""The sanitizer's output read by a real browser: headless Chromium parses every vector's output
(tests/data/sanitize, the same as tests/test_recipes_sanitize.py) under the policies there.

Two readings, both Chromium's own HTML parser:

* ``DOMParser().parseFromString(output, "text/html")`` for each output apart: every element is
  one the policy allows (or the document's html/head/body, with no attributes), no attribute
  starts with ``on``, every attribute the policy allows holds only allowed content, and each URL
  attribute's scheme, as Chromium's ``URL`` reads it, is an allowed one;
* all outputs in one live page, each in its own ``<div>``, with ``alert``/``confirm``/``prompt``
  /``print`` and ``eval`` replaced by recorders: after the load and its events (a virtual-time
  budget), nothing ran and every ``<div>`` still holds its own content (an output that did not
  close what it opened would swallow the next ``<div>``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from htmlstream import Policy, sanitize
from htmlstream.recipes.sanitize import URL_ATTRIBUTES
from test_recipes_sanitize import POLICIES, VECTORS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium; `make test` "
    "does it when run as root with apt)")

#: The recorders and checks, run in the page (all data comes in as JSON).
SCRIPT = r"""
const data = JSON.parse(document.getElementById("data").textContent);
const ran = [];
for (const name of ["alert", "confirm", "prompt", "print"]) {
  window[name] = (...args) => { ran.push(name + "(" + args.join(",") + ")"); };
}
const realEval = window.eval;
window.eval = (s) => { ran.push("eval"); };
function check(html, policy) {
  const problems = [];
  const doc = new DOMParser().parseFromString(html, "text/html");
  for (const el of doc.querySelectorAll("*")) {
    const name = el.localName;
    const inHtml = el.namespaceURI === "http://www.w3.org/1999/xhtml";
    if (["html", "head", "body"].includes(name) && inHtml) {
      if (el.attributes.length) problems.push("<" + name + "> with attributes");
      continue;
    }
    if (!policy.tags.includes(name.toLowerCase())) {
      problems.push("element <" + name + ">");
      continue;
    }
    for (const a of el.attributes) {
      const an = a.name.toLowerCase();
      if (an.startsWith("on")) problems.push("<" + name + " " + an + ">");
      if (policy.url_attributes.includes(an)) {
        let scheme = null;
        try { scheme = new URL(a.value, "https://base.test/").protocol.slice(0, -1); }
        catch (e) { scheme = null; }
        const relative = !/^\s*[a-zA-Z][a-zA-Z0-9+.-]*:/.test(a.value);
        const allowed = (relative && policy.relative_urls) || policy.schemes.includes(scheme);
        if (scheme !== null && !allowed)
          problems.push("<" + name + " " + an + "=" + JSON.stringify(a.value) + "> " + scheme);
      }
    }
  }
  if (doc.querySelector("script")) problems.push("a <script>");
  return problems;
}
const results = {};
for (const [policyName, entry] of Object.entries(data.policies)) {
  for (const [i, html] of entry.outputs.entries()) {
    const p = check(html, entry.policy);
    if (p.length) results[policyName + "/" + data.names[i]] = p;
  }
}
window.addEventListener("load", () => {
  setTimeout(() => {
    const swallowed = [];
    for (const div of document.querySelectorAll("div.v")) {
      if (div.parentElement !== document.body) swallowed.push(div.id);
    }
    const out = document.createElement("pre");
    out.id = "result";
    out.textContent = JSON.stringify({problems: results, ran: ran, swallowed: swallowed,
                                      divs: document.querySelectorAll("div.v").length});
    document.documentElement.appendChild(out);
  }, 500);
});
"""


def _policy_data(policy: Policy) -> dict[str, object]:
    return {"tags": sorted(t.lower() for t in policy.tags),
            "schemes": sorted(policy.url_schemes), "relative_urls": policy.relative_urls,
            "url_attributes": sorted(URL_ATTRIBUTES)}


def test_outputs_read_by_chromium(tmp_path: Path) -> None:
    names = [name for name, _ in VECTORS]
    data: dict[str, object] = {"names": names, "policies": {}}
    live: list[str] = []
    for policy_name, policy in POLICIES.items():
        outputs = [sanitize(source, policy) for _, source in VECTORS]
        data["policies"][policy_name] = {  # type: ignore[index]
            "policy": _policy_data(policy), "outputs": outputs}
        if policy_name == "default":
            live = outputs
    payload = json.dumps(data).replace("<", "\\u003c")
    divs = "".join(f'<div class="v" id="v{i}">{html}</div>' for i, html in enumerate(live))
    # The recorders first (a script before the outputs), the checks after the load.
    page = ("<!DOCTYPE html><html><head><meta charset=utf-8><title>sanitized</title>"
            f'<script type="application/json" id="data">{payload}</script>'
            "<script>" + SCRIPT.split("function check", 1)[0] + "</script></head><body>"
            f"{divs}<script>function check" + SCRIPT.split("function check", 1)[1]
            + "</script></body></html>")
    path = tmp_path / "page.html"
    path.write_text(page, "utf-8")
    assert CHROMIUM is not None
    res = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=5000", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=180, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    start = res.stdout.find('<pre id="result">')
    assert start >= 0, res.stdout[-2000:]
    end = res.stdout.find("</pre>", start)
    import html as html_module
    result = json.loads(html_module.unescape(res.stdout[start + len('<pre id="result">'):end]))
    assert result["divs"] == len(live)
    assert result["ran"] == [], result["ran"]
    assert result["swallowed"] == [], result["swallowed"][:20]
    assert result["problems"] == {}, dict(list(result["problems"].items())[:20])
