"""What ``haystack serve`` lets in: the server's security model, as one policy (enforced by guards.py).

A server on 127.0.0.1 is reachable from every web page the user opens (a page may post to any
address, and DNS rebinding names it with the page's own host), so, without configuration:
- a request must name the server by a loopback name, the ``--host`` address or an ``--allowed-host``
  (400 otherwise: a rebound page's Host is its own domain);
- a request from a web page (an ``Origin`` header, or ``Sec-Fetch-Site`` cross-site/same-site) is
  refused (403) unless its origin was given with ``--cors-origin``; only those origins get CORS headers;
- a POST must be ``application/json`` (415): a page can send a form or text without asking the
  server first, never JSON. The one exception is a file upload to an index route
  (``multipart/form-data``, which a form can send): the origin checks above refuse another site's
  page, an API key (a header no form can set) stops the rest, and its size is capped by
  ``--max-upload-bytes`` instead;
- with an API key (``--api-key-env NAME``) every route but ``GET /status`` needs
  ``Authorization: Bearer KEY`` (401); listening on a non-loopback address needs a key, or
  ``--insecure-no-auth``;
- a body is read up to ``--max-body-bytes`` (413 beyond, before it is held in memory) and must be
  JSON without NaN, Infinity or lone surrogates (400), which Python's parser accepts and the
  pipelines (or the JSON response) would fail on."""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from dpr_components.utils.validation import describe_lone_surrogate

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_MAX_UPLOAD_BYTES = 32 * 1024 * 1024
MIN_API_KEY_CHARS = 16
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_ADDRESSES = ("0.0.0.0", "::")
CORS_METHODS = ("GET", "POST")
CORS_HEADERS = ("Authorization", "Content-Type")
_HOST_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")
_KEY_CHARACTERS = re.compile(r"^[\x21-\x7e]+$")  # printable ASCII, no spaces: it travels in a header
_KEY_HINT = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


@dataclass(frozen=True)
class ServerPolicy:
    """Who may call the server, and what a request may carry (see the module docstring)."""

    host: str = "127.0.0.1"
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    api_key: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    log_queries: bool = False
    enable_training: bool = False

    def host_names(self) -> frozenset[str]:
        """The names a request's Host header may give."""
        bound = () if self.host in WILDCARD_ADDRESSES else (self.host.lower(),)
        return frozenset((*LOOPBACK_NAMES, *bound, *self.allowed_hosts))


# ---- the command line's options -------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """Whether ``host`` is an address only this machine reaches (``localhost`` or a loopback IP)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def check_bind_address(host: str, has_api_key: bool, insecure_no_auth: bool) -> None:
    """Refuse to listen beyond this machine without an API key, unless the user said so."""
    if is_loopback(host) or has_api_key or insecure_no_auth:
        return
    raise ValueError(
        f"--host {host} is not a loopback address, so anyone who can reach it could search and change the store: "
        "set an API key with --api-key-env NAME (the key in environment variable NAME), "
        "or pass --insecure-no-auth to serve without one"
    )


def read_api_key(variable: str) -> str:
    """The API key in environment variable ``variable``; never echoed in errors."""
    key = os.environ.get(variable, "")
    if not key:
        raise ValueError(f"--api-key-env {variable}: the environment variable {variable} is not set or empty")
    if not _KEY_CHARACTERS.match(key):
        raise ValueError(f"--api-key-env {variable}: the key must be printable ASCII without spaces")
    if len(key) < MIN_API_KEY_CHARS:
        raise ValueError(
            f"--api-key-env {variable}: the key has {len(key)} characters, the minimum is "
            f"{MIN_API_KEY_CHARS}; make one with {_KEY_HINT}"
        )
    return key


def normalize_origin(origin: str) -> str:
    """``origin`` as browsers send it (``scheme://host[:port]``, lower case, no default port)."""
    problem = f"--cors-origin {origin!r}: an origin is scheme://host[:port], e.g. https://app.example.com"
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        raise ValueError(problem) from None
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path
        or parts.query
        or parts.fragment
        or parts.username
        or parts.password
    ):
        raise ValueError(f"{problem}, without path, '*' or credentials")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = {"http": 80, "https": 443}[parts.scheme]
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def normalize_host_name(name: str) -> str:
    """``name`` (a host name or IP address, no port) in lower case; ``ValueError`` when it is neither."""
    host = name.strip().lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        pass
    if not _HOST_NAME.match(host):
        raise ValueError(f"--allowed-host {name!r}: give a host name or IP address, without scheme or port")
    return host


def host_header_name(value: str) -> str:
    """The host name of a Host header (``name``, ``name:port``, ``[v6]:port``), lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    name = value.rsplit(":", 1)[0] if value.count(":") == 1 else value
    return name.rstrip(".")


def _without_request_inputs(record: dict[str, Any]) -> None:
    record["extra"].pop("params", None)  # hayhooks binds a run's inputs to its "Running pipeline" line


def _with_request_inputs(record: dict[str, Any]) -> None:
    """Leaves records as they are (loguru cannot unset a patcher, only replace it)."""


def configure_server_logs(log_queries: bool) -> None:
    """hayhooks' log (loguru, on stderr) without the inputs of each run unless ``log_queries``, and
    never with the values of variables in tracebacks (loguru's ``diagnose``, which would show queries
    and request headers, the API key among them)."""
    from hayhooks.server.logger import formatter, log

    log.configure(patcher=_with_request_inputs if log_queries else _without_request_inputs)
    log.remove()
    level = os.getenv("HAYHOOKS_LOG_LEVEL") or os.getenv("LOG") or "INFO"  # as hayhooks reads it
    log.add(sys.stderr, level=level.upper(), format=formatter, diagnose=False)


# ---- request bodies -------------------------------------------------------------------------------


class _NotFinite(ValueError):
    """A JSON number Python would parse as NaN or an infinity."""


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(f"the number {text[:40]} is too large")
    return value


def _refuse_constant(name: str) -> float:
    raise _NotFinite(f"{name} is not valid JSON")


def _strings(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """Every string of a parsed JSON value (keys included) with the field path leading to it."""
    stack = [(where, value)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            yield where or "the top-level value", value
        elif isinstance(value, dict):
            for key, child in value.items():
                path = f"{where}.{key}" if where else str(key)
                yield path, key
                stack.append((path, child))
        elif isinstance(value, list):
            stack.extend((f"{where}[{index}]", child) for index, child in enumerate(value))


def json_body_problem(body: bytes) -> str | None:
    """Why ``body`` is not JSON the pipelines can take, or ``None``."""
    try:
        data = json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _NotFinite as error:
        return f"request body: {error} (numbers must be finite)"
    except json.JSONDecodeError as error:
        return f"request body is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
    except UnicodeDecodeError:
        return "request body is not UTF-8 text"
    except RecursionError:
        return "request body is nested too deeply"
    except ValueError as error:  # an integer of more than 4,300 digits; the rest of the message is for Python code
        return f"request body: {' '.join(str(error).split(';')[0].split())}"
    for where, text in _strings(data):
        surrogate = describe_lone_surrogate(text)
        if surrogate:
            shown = where[:80].encode("utf-8", "backslashreplace").decode("utf-8")  # a key may hold the surrogate
            return f"request body: {shown} is not valid Unicode: {surrogate}"
    return None
