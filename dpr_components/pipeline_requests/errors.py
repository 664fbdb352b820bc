"""The errors a request may end in that describe a mistake in it (a bad input, filter or file, a store's
server that does not answer), found inside Haystack's wrappers and told on one line."""

from __future__ import annotations

import logging

from haystack.document_stores.errors import DocumentStoreError
from haystack.errors import FilterError

from dpr_components.utils.output_files import describe_os_error


class ServerUnreachableError(ConnectionError):
    """A server the pipeline talks to (Elasticsearch) did not answer; the message names it and the fix."""


def user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that describe a mistake in the input, printed as one line; anything else is a bug and surfaces."""
    return (ValueError, FilterError, DocumentStoreError, OSError)


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


def user_error_cause(
    error: BaseException, kinds: tuple[type[BaseException], ...] | None = None
) -> BaseException | None:
    """The outermost user error (of ``kinds``, default :func:`user_errors`) in ``error``'s chain of
    causes, ``error`` itself included, if any: Haystack wraps a component's exception in its own,
    and components wrap a library's."""
    kinds = kinds or user_errors()
    unreachable = unreachable_server(error)
    if unreachable is not None and isinstance(unreachable, kinds):
        return unreachable
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, kinds):
        cause = cause.__cause__
    return cause


def one_line(error: BaseException) -> str:
    """The message of a user error on one line (an ``OSError`` says which file)."""
    if isinstance(error, OSError) and not isinstance(error, ServerUnreachableError):
        return describe_os_error(error)
    return " ".join(str(error).split()) or type(error).__name__
