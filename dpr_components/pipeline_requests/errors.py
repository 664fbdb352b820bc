"""The one rule for the errors a request may end in, used by the ``haystack`` command, the HTTP server and
the LangChain retriever: which of them are not bugs but something the user is told (a mistake in the
request: a bad input, filter or file; a server the pipeline needs that does not answer or answers an
error; a file this machine cannot read or write), found inside Haystack's and the components' wrappers,
and the one line the user reads for it (:func:`user_error`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from http import HTTPStatus
from urllib.parse import urlsplit

from haystack.document_stores.errors import DocumentStoreError
from haystack.errors import FilterError

from dpr_components.utils.output_files import describe_os_error

# The request's own mistakes: a bad field, filter, record or file name (a file that does not exist).
REQUEST_MISTAKES: tuple[type[BaseException], ...] = (ValueError, FilterError, DocumentStoreError, FileNotFoundError)


class ServerUnreachableError(ConnectionError):
    """A server the pipeline talks to (Elasticsearch) did not answer; the message names it and the fix."""


class RemoteServerError(ConnectionError):
    """A server a component talks to (a fetched URL, a generator's API, a remote store) answered with an
    HTTP error status; the message names the component and the status."""


def quiet_retry_logs(verbose: bool) -> None:
    """Elasticsearch's client logs every retry with a traceback at WARNING; the command's error line says
    what failed once, so those logs show only with ``--verbose``."""
    logging.getLogger("elastic_transport").setLevel(logging.INFO if verbose else logging.ERROR)


def unreachable_server(error: BaseException) -> ServerUnreachableError | None:
    """One line for a connection that failed in ``error``'s chain (urllib3 keeps the address on ``conn``)."""
    cause: BaseException | None = error
    while cause is not None:
        connection = getattr(cause, "conn", None)
        host, port = getattr(connection, "host", None), getattr(connection, "port", None)
        if host is not None:
            reason = cause.__cause__ or cause.__context__
            why = (getattr(reason, "strerror", None) or type(reason or cause).__name__).lower()
            return ServerUnreachableError(
                f"cannot reach the server at {host}:{port} ({why}); start it, or point the pipeline's store at "
                "another one (--set COMPONENT.document_store.hosts=URL)"
            )
        cause = cause.__cause__
    return None


def _http_status(error: BaseException) -> int | None:
    """The HTTP error status a client library's exception carries: httpx and requests on ``response``,
    OpenAI's and Elasticsearch's clients as ``status_code``."""
    response = getattr(error, "response", None)
    for status in (getattr(response, "status_code", None), getattr(error, "status_code", None)):
        if isinstance(status, int) and not isinstance(status, bool) and 400 <= status <= 599:
            return status
    return None


def _remote_address(error: BaseException) -> str | None:
    """Where the answer came from: the request's URL (httpx, requests, OpenAI) or the node (Elasticsearch)."""
    for holder in (getattr(error, "request", None), getattr(error, "response", None)):
        url = urlsplit(str(getattr(holder, "url", None) or ""))
        if url.hostname:  # without credentials or query, which may hold a key
            return f"{url.scheme}://{url.hostname}{f':{url.port}' if url.port else ''}{url.path}"
    node = getattr(getattr(error, "meta", None), "node", None)
    host, port = getattr(node, "host", None), getattr(node, "port", None)
    return f"{host}:{port}" if host else None


def remote_status_error(error: BaseException) -> RemoteServerError | None:
    """One line for a remote server's HTTP error status in ``error``'s chain, naming the component that
    called it (Haystack's wrapper keeps its name) and the status."""
    who = "a component"
    cause: BaseException | None = error
    while cause is not None:
        component, component_type = getattr(cause, "component_name", None), getattr(cause, "component_type", None)
        if component:
            who = f"component {component!r}" + (f" ({component_type.__name__})" if component_type else "")
        status = _http_status(cause)
        if status is not None:
            address = _remote_address(cause)
            where = f"the server at {address}" if address else "its server"
            try:
                phrase = f" {HTTPStatus(status).phrase}"
            except ValueError:
                phrase = ""
            return RemoteServerError(
                f"{who}: {where} answered HTTP {status}{phrase}; the request was not completed (check that "
                "server, or retry later)"
            )
        cause = cause.__cause__
    return None


def cause_of_kind(error: BaseException, kinds: tuple[type[BaseException], ...]) -> BaseException | None:
    """The outermost exception of ``kinds`` in ``error``'s chain of causes, ``error`` itself included, if
    any: Haystack wraps a component's exception in its own, and components wrap a library's."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, kinds):
        cause = cause.__cause__
    return cause


class Blame(Enum):
    """Whose the failure is, which decides how a front end answers it (the server's status code)."""

    REQUEST = "request"  # the request's own mistake (REQUEST_MISTAKES): HTTP 400
    UNREACHABLE = "unreachable"  # a server the pipeline needs does not answer: HTTP 503
    REMOTE = "remote"  # a server a component called answered an HTTP error status: HTTP 502
    LOCAL = "local"  # a file or folder this machine could not read or write (another OSError): HTTP 500


@dataclass(frozen=True)
class UserError:
    """A failure the user is told on one line instead of a traceback: whose it is, the exception to show
    in place of the wrappers around it, and the line."""

    blame: Blame
    cause: BaseException
    line: str


def _blame(cause: BaseException) -> Blame:
    if isinstance(cause, ServerUnreachableError):
        return Blame.UNREACHABLE
    if isinstance(cause, RemoteServerError):
        return Blame.REMOTE
    return Blame.REQUEST if isinstance(cause, REQUEST_MISTAKES) else Blame.LOCAL


def user_error(error: BaseException) -> UserError | None:
    """What the user is told for ``error``, or ``None`` when it is a bug (it surfaces as it is): a
    connection that failed or a remote server's error status anywhere in its chain, else the outermost
    request mistake (:data:`REQUEST_MISTAKES`) or ``OSError`` in it. The one rule of every front end."""
    found = unreachable_server(error) or remote_status_error(error)
    cause = found or cause_of_kind(error, (*REQUEST_MISTAKES, OSError))
    return None if cause is None else UserError(_blame(cause), cause, one_line(cause))


@contextmanager
def user_errors_unwrapped() -> Iterator[None]:
    """Raise the exception :func:`user_error` finds in an error in the error's place (a component's own
    instead of Haystack's wrapper around it); a bug as it is."""
    try:
        yield
    except Exception as error:
        found = user_error(error)
        if found is None or found.cause is error:
            raise
        raise found.cause from None


def one_line(error: BaseException) -> str:
    """The message of a user error on one line (an ``OSError`` says which file)."""
    if isinstance(error, OSError) and not isinstance(error, (ServerUnreachableError, RemoteServerError)):
        return describe_os_error(error)
    return " ".join(str(error).split()) or type(error).__name__
