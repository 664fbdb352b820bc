"""The ask page at ``GET /``: a question, the reader's answers (or "no confident answer"), the BM25,
dense and hybrid lists, a passage's whole document, top-k and title filter, example questions, the
store's passage count and, when ``index`` is served, a corpus upload. Plain HTML, scripts, style and
icon from the package (page/), nothing from elsewhere: every answer carries
``Content-Security-Policy: default-src 'self'``.

The page's files are public (no API key: they hold no data); the page sends the key the user types
with each call it makes, and keeps it only in memory. ``/favicon.ico`` redirects to ``/favicon.svg``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

from fastapi import FastAPI
from fastapi.responses import RedirectResponse, Response

PAGE_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/page/core.js": ("core.js", "text/javascript; charset=utf-8"),
    "/page/render.js": ("render.js", "text/javascript; charset=utf-8"),
    "/page/store.js": ("store.js", "text/javascript; charset=utf-8"),
    "/page/app.css": ("app.css", "text/css; charset=utf-8"),
    "/favicon.svg": ("favicon.svg", "image/svg+xml"),
}
FAVICON_ICO = "/favicon.ico"
PAGE_PATHS = (*PAGE_FILES, FAVICON_ICO)
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


async def _favicon_ico() -> Response:
    """Browsers that ask for ``/favicon.ico`` are sent to the SVG icon."""
    return RedirectResponse("/favicon.svg", status_code=308, headers=PAGE_HEADERS)


def add_page_routes(app: FastAPI) -> None:
    """The page's files at their paths (read once), and ``/favicon.ico``'s redirect."""
    for path, (name, media_type) in PAGE_FILES.items():
        app.add_api_route(path, _serving(page_file(name), media_type), methods=["GET"], include_in_schema=False)
    app.add_api_route(FAVICON_ICO, _favicon_ico, methods=["GET"], include_in_schema=False)
