"""The ASGI middlewares that enforce a ``ServerPolicy`` (see security.py for the model).

``OriginGuard`` sits outside CORS (a refused page gets no CORS headers), ``RequestGuard`` inside it
(an allowed page can read why its request was refused)."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from dpr_components.serving.ask_page import PAGE_PATHS
from dpr_components.serving.security import (
    ServerPolicy,
    host_header_name,
    json_body_problem,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Answered without an API key: a health check for probes and load balancers, and the ask page's files
# (no data in them; the page sends the key the user types with each call it makes).
PUBLIC_PATHS = ("/status", *PAGE_PATHS)


async def _refuse(
    scope: Scope, receive: Receive, send: Send, status: int, detail: str, headers: dict[str, str] | None = None
) -> None:
    await JSONResponse({"detail": detail}, status_code=status, headers=headers)(scope, receive, send)


def _own_origin(scope: Scope, headers: Headers) -> str:
    """The origin of this server's own pages as the request names it (its Host header, already checked)."""
    return f"{scope.get('scheme', 'http')}://{headers.get('host', '')}".lower()


def _origin_problem(headers: Headers, allowed: frozenset[str], own: str) -> str | None:
    """Why a request that a web page sent is refused, or ``None`` (not from a page, this server's own
    page, or an allowed origin)."""
    origin = headers.get("origin")
    if origin is not None:
        if origin.lower() in allowed or origin.lower() == own:
            return None
        return (
            f"requests from web pages at {origin[:100]} are not allowed; start the server with "
            f"--cors-origin {origin[:100]} to allow that origin"
        )
    if headers.get("sec-fetch-site") in ("cross-site", "same-site"):
        return "requests from other web sites are not allowed; start the server with --cors-origin ORIGIN to allow one"
    return None


class OriginGuard:
    """Outermost: the Host header names this server, and a web page's origin is this server's own (the ask
    page, once its Host passed) or one allowed with ``--cors-origin``."""

    def __init__(self, app: ASGIApp, policy: ServerPolicy) -> None:
        self.app = app
        self.hosts = policy.host_names()
        self.origins = frozenset(policy.cors_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = host_header_name(headers.get("host", ""))
        if host not in self.hosts:
            shown = headers.get("host", "")[:100] or "(none)"
            await _refuse(
                scope,
                receive,
                send,
                400,
                f"the Host header {shown!r} does not name this server; "
                f"start it with --allowed-host {host[:100] or 'NAME'} if clients reach it by that name",
            )
            return
        problem = _origin_problem(headers, self.origins, _own_origin(scope, headers))
        if problem:
            await _refuse(scope, receive, send, 403, problem)
            return
        await self.app(scope, receive, send)


def _api_key_problem(headers: Headers, key: bytes) -> str | None:
    """Why the request's ``Authorization`` header does not carry the API key, or ``None``."""
    value = headers.get("authorization")
    if value is None:
        return "this server needs an API key: send the header 'Authorization: Bearer KEY'"
    scheme, _, given = value.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode("latin-1"), key):
        return "wrong API key: send the header 'Authorization: Bearer KEY' with the server's key"
    return None


def carries_api_key(headers: Headers, key: str | None) -> bool:
    """Whether a request may see what the API key protects: the server has no key, or the request sends it."""
    return key is None or _api_key_problem(headers, key.encode("ascii")) is None


def _is_json(content_type: str | None) -> bool:
    return content_type is not None and content_type.split(";", 1)[0].strip().lower() == "application/json"


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body, or ``None`` as soon as it has more than ``limit`` bytes (the rest is never read)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionAbortedError("the client disconnected")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then what the client sends next (a disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


def _is_multipart(content_type: str | None) -> bool:
    return content_type is not None and content_type.split(";", 1)[0].strip().lower() == "multipart/form-data"


class RequestGuard:
    """Inside CORS: the API key, a JSON content type on POST (or a file upload to one of ``upload_paths``),
    the body's size and content."""

    def __init__(self, app: ASGIApp, policy: ServerPolicy, upload_paths: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.key = policy.api_key.encode("ascii") if policy.api_key else None
        self.max_body_bytes = policy.max_body_bytes
        self.max_upload_bytes = policy.max_upload_bytes
        self.upload_paths = upload_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self.key is not None and scope["path"] not in PUBLIC_PATHS:
            problem = _api_key_problem(headers, self.key)
            if problem:
                await _refuse(scope, receive, send, 401, problem, {"WWW-Authenticate": "Bearer"})
                return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        content_type = headers.get("content-type")
        if _is_multipart(content_type) and scope["path"] in self.upload_paths:
            await self._with_checked_body(scope, receive, send, headers, upload=True)
            return
        if not _is_json(content_type):
            shown = (content_type or "none")[:100]
            uploads = " (or multipart/form-data, a file upload)" if scope["path"] in self.upload_paths else ""
            await _refuse(
                scope,
                receive,
                send,
                415,
                f"the request body must be JSON{uploads}: send the header 'Content-Type: application/json' "
                f"(got {shown!r})",
            )
            return
        await self._with_checked_body(scope, receive, send, headers)

    async def _with_checked_body(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers, upload: bool = False
    ) -> None:
        limit, option = (
            (self.max_upload_bytes, "--max-upload-bytes") if upload else (self.max_body_bytes, "--max-body-bytes")
        )
        too_large = f"the request body is larger than {limit:,} bytes ({option})"
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            await _refuse(scope, receive, send, 413, too_large)
            return
        try:
            body = await read_body(receive, limit)
        except ConnectionAbortedError:
            return  # nobody to answer
        if body is None:
            await _refuse(scope, receive, send, 413, too_large)
            return
        problem = json_body_problem(body) if body and not upload else None
        if problem:
            await _refuse(scope, receive, send, 400, problem)
            return
        await self.app(scope, _replaying(body, receive), send)
