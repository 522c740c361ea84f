#!/usr/bin/env python3
"""Write the script-heavy benchmark page, ``benchmarks/data/script-heavy.html`` (issue 21).

A page like the ones that are mostly inline JavaScript (a framework's bundle and its data inlined
into the HTML): about 90 % of its bytes are inside ``<script>`` elements whose code has ``<`` and
``</`` in strings, templates, regular expressions and comments (``"</div>"``, ``i < n``,
``// </p>``, ``"<\\/script>"``), between ordinary markup with a few hundred links.  Deterministic:
the same bytes on every run, so that figures compare across commits.

    .venv/bin/python benchmarks/make_script_page.py            # writes the page
    .venv/bin/python benchmarks/bench.py --corpus benchmarks/data

"""

from __future__ import annotations

import argparse
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "script-heavy.html"

#: One function of the inline bundle; {i} varies it.
FUNCTION = """\
  function render{i}(items, n) {{
    // builds the list: <ul> ... </ul> (a comment with markup in it)
    var html = "<ul class=\\"list-{i}\\">";
    for (var k = 0; k < n && k < items.length; k++) {{
      if (items[k].rank < {i} || items[k].rank > 3 * {i}) {{ continue; }}
      html += '<li data-k="' + k + '"><a href="/item/' + items[k].id + '">' + items[k].name
        + "</a></li>";
    }}
    /* the closing tag is split so that the HTML parser does not end the script: </ul> */
    html += "</" + "ul>";
    var re{i} = /<\\/?(span|div|p)[^>]*>/g;
    var tpl = `<div class="card">${{items.length}} items < {i}</div>`;
    document.getElementById("slot-{i}").innerHTML = html.replace(re{i}, "") + tpl;
    return a{i} < b{i} ? "<\\/script>" : "</b" + ">";
  }}
"""

#: Inline data, as frameworks inline their state: JSON whose strings hold markup.
DATA = """\
  window.__STATE__[{i}] = {{"id": {i}, "title": "Post {i} <b>bold</b> & <i>more</i>",
    "body": "<p>Paragraph {i} with a <a href=\\"/x/{i}\\">link</a> and 1 < 2 </p>",
    "tags": ["<em>t{i}</em>", "a<b", "c </ d"], "score": {score}}};
"""


def page(functions: int = 700, links: int = 300) -> str:
    """The page: a head with the inline bundle, a body of articles with links, each tenth
    article followed by an inline state script."""
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<title>Script-heavy page</title>\n"
        "<script>\n  window.__STATE__ = {};\n"
    ]
    parts.extend(FUNCTION.format(i=i) for i in range(functions // 2))
    parts.append("</script>\n</head>\n<body>\n<nav>\n")
    parts.extend(f'  <a href="/section/{i}">Section {i}</a>\n' for i in range(links // 3))
    parts.append("</nav>\n<main>\n")
    for i in range(links - links // 3):
        parts.append(
            f'<article id="post-{i}"><h2><a href="/post/{i}">Post {i}</a></h2>'
            f'<p>Summary of post {i}, <a href="/tag/{i % 17}" rel="tag">tag {i % 17}</a>.</p>'
            f'<div id="slot-{i}"></div></article>\n'
        )
        if i % 10 == 9:
            parts.append("<script>\n")
            parts.extend(DATA.format(i=j, score=j * 7 % 100) for j in range(i - 9, i + 1))
            parts.extend(FUNCTION.format(i=functions + j) for j in range(i - 9, i + 1))
            parts.append("</script>\n")
    parts.append("</main>\n<script>\n")
    parts.extend(FUNCTION.format(i=i) for i in range(functions // 2, functions))
    parts.append("</script>\n</body>\n</html>\n")
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", type=Path, default=OUT)
    args = parser.parse_args(argv)
    text = page()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    pieces = text.split("<script>")
    scripts = [s.split("</script>")[0] for s in pieces[1:]]
    markup = pieces[0] + "".join(s.split("</script>", 1)[1] for s in pieces[1:])
    print(f"wrote {args.output}: {len(text)} bytes, {sum(map(len, scripts)) / len(text):.0%} in "
          f"scripts, {markup.count('<a href=')} links")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
