"""The ask page at ``GET /``: a question, the BM25, dense and hybrid lists side by side, the reader's
answers marked in their passages. Plain HTML, script and style from the package (page/), nothing
from elsewhere: every answer carries ``Content-Security-Policy: default-src 'self'``.

The page and its two files are public (no API key: they hold no data); the page sends the key the
user types with each call it makes, and keeps it only in memory."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

from fastapi import FastAPI
from fastapi.responses import Response

PAGE_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/page/app.css": ("app.css", "text/css; charset=utf-8"),
}
PAGE_PATHS = tuple(PAGE_FILES)
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def page_file(name: str) -> bytes:
    """The bytes of a file of the page folder."""
    return resources.files("dpr_components.serving").joinpath("page", name).read_bytes()


def _serving(body: bytes, media_type: str) -> Callable[[], Awaitable[Response]]:
    async def serve() -> Response:
        return Response(content=body, media_type=media_type, headers=PAGE_HEADERS)

    return serve


def add_page_routes(app: FastAPI) -> None:
    """``GET /``, ``/page/app.js`` and ``/page/app.css``, read once."""
    for path, (name, media_type) in PAGE_FILES.items():
        app.add_api_route(path, _serving(page_file(name), media_type), methods=["GET"], include_in_schema=False)
