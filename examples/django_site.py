"""A Django project in one file whose settings put htmlstream's middleware in MIDDLEWARE
(HTMLSTREAM_REWRITER, HTMLSTREAM_OPTIONS, HTMLSTREAM_CONTEXT): external links get rel=noopener,
images load lazily, every inline script gets the response's CSP nonce (header included).

    python examples/django_site.py runserver 127.0.0.1:8000   # or any manage.py command
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import path

import htmlstream
from htmlstream import recipes
from htmlstream.http import HttpOptions

# ---------------------------------------------------------------- settings
DEBUG = True
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-not-secret")
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
ROOT_URLCONF = __name__
INSTALLED_APPS: list[str] = []
MIDDLEWARE = [
    "django.middleware.gzip.GZipMiddleware",     # above: compresses what was rewritten
    "htmlstream.integrations.django.HtmlRewriteMiddleware",
    "django.middleware.common.CommonMiddleware",
]
HTMLSTREAM_REWRITER = f"{__name__}.REWRITER"       # a Rewriter, or its dotted path
HTMLSTREAM_OPTIONS = HttpOptions(drop_etag=True)   # (the page differs on every response)
HTMLSTREAM_CONTEXT = f"{__name__}.context"         # per response: its CSP nonce


# ---------------------------------------------------------------- the rewriter
def _external_link(el: htmlstream.Element) -> None:
    if (el.get_attribute("href") or "").startswith(("http://", "https://")):
        el.set_attribute("rel", "noopener noreferrer")


REWRITER = (htmlstream.Rewriter()
            .on("a[href]", element=_external_link)
            .on("img", element=lambda el: el.set_attribute("loading", "lazy"))
            .use(recipes.csp_nonce()))


def context(request: HttpRequest) -> dict[str, Any]:
    return {"csp_nonce": secrets.token_urlsafe(16)}


# ---------------------------------------------------------------- views and URLs
def home(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(
        "<!doctype html><title>Django</title><h1>Hello</h1>"
        "<script>console.log('hi')</script><img src=/photo.jpg alt=photo>"
        "<a href=https://www.djangoproject.com/>Django</a> <a href=/about>About</a>")
    response["Content-Security-Policy"] = "default-src 'self'"
    return response


urlpatterns = [path("", home)]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_site")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
