"""File uploads to the index routes: ``POST /index/run`` (and ``/index_files/run``) with
``multipart/form-data``, one or more form fields named ``file``.

The files go through the folder pipeline (``index_files.yml``: Haystack's router and converters, the
cleaner, the splitter, the embedder, the writer), as a folder's files do, each file's name its
``meta.path``: a name the store holds with other content is replaced, the same content is left as it is,
and no other file of the store is touched. Its kind is told by its name and checked by its content
(``dpr_components/corpus/file_types.py``). A route whose own pipeline has no ``FolderFetcher`` (``index``,
which reads corpus files and records) hands uploads to the served pipeline that has one over the same
store folder; a server serving none takes no uploads (415, as for any body that is not JSON).

The body is capped by ``--max-upload-bytes`` (413, by ``RequestGuard`` before it is parsed), and a request
carries at most ``MAX_FILES`` files."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping

import anyio
from fastapi import FastAPI
from hayhooks import log
from haystack.dataclasses import ByteStream
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route
from starlette.types import Scope

from dpr_components.serving.routes import run_in_worker
from dpr_components.serving.run_queues import RunQueues
from dpr_components.serving.wrappers import DeclaredPipelineWrapper, IndexWrapper, takes_uploads

UPLOAD_FIELD = "file"
MAX_FILES = 100
FILES_PIPELINE = "index_files"


class _UploadRoute(Route):
    """A route matched only by a ``multipart/form-data`` request, so that the JSON route of the same path
    keeps every other request (and its typed model in the OpenAPI schema)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)  # the path and method first: most requests stop there
        if match is Match.NONE:
            return match, child
        content_type = dict(scope.get("headers") or []).get(b"content-type", b"")
        if content_type.split(b";", 1)[0].strip().lower() != b"multipart/form-data":
            return Match.NONE, {}
        return match, child


def _same_folder(one: str | None, other: str | None) -> bool:
    return one is not None and other is not None and os.path.realpath(one) == os.path.realpath(other)


def upload_targets(wrappers: Mapping[str, DeclaredPipelineWrapper]) -> dict[str, str]:
    """For each served index pipeline that can take files, the pipeline that indexes them: its own when it
    has a ``FolderFetcher``, else ``index_files`` when that is served over the same store folder."""
    targets: dict[str, str] = {}
    files = wrappers.get(FILES_PIPELINE)
    for name, wrapper in wrappers.items():
        if not isinstance(wrapper, IndexWrapper):
            continue
        if takes_uploads(wrapper.spec):
            targets[name] = name
        elif files is not None and takes_uploads(files.spec) and _same_folder(wrapper.store_folder, files.store_folder):
            targets[name] = FILES_PIPELINE
    return targets


async def _uploaded(request: Request) -> list[ByteStream]:
    """The files of the request's ``file`` fields; a 400 when there is none or another field."""
    async with request.form(max_files=MAX_FILES, max_fields=MAX_FILES) as form:
        unknown = sorted({key for key, value in form.multi_items() if key != UPLOAD_FIELD})
        if unknown:
            raise HTTPException(
                status_code=400, detail=f"unknown form field {unknown[0]!r}: send each file as a field named 'file'"
            )
        found = [value for value in form.getlist(UPLOAD_FIELD) if isinstance(value, UploadFile)]
        if not found:
            raise HTTPException(
                status_code=400,
                detail="no file in the upload: send each file as a form field named 'file' "
                "(curl -F file=@report.pdf ...)",
            )
        return [ByteStream(data=await f.read(), meta={"file_name": f.filename or ""}) for f in found]


def _upload_endpoint(
    name: str, wrapper: IndexWrapper, limiter: anyio.CapacityLimiter
) -> Callable[[Request], Awaitable[Response]]:
    """The upload handler: the files read, then indexed by ``wrapper`` in a worker thread (``limiter``'s
    queue); a failure told as the JSON route tells it."""

    async def upload(request: Request) -> Response:
        try:
            files = await _uploaded(request)
            log.info("Indexing {} uploaded file(s) with pipeline '{}'", len(files), name)
            result = await run_in_worker(name, lambda: wrapper.run_files(files), limiter)
        except HTTPException as error:
            return JSONResponse({"detail": error.detail}, status_code=error.status_code)
        return JSONResponse({"result": result.model_dump(mode="json")})

    return upload


def add_upload_routes(
    app: FastAPI, wrappers: Mapping[str, DeclaredPipelineWrapper], targets: Mapping[str, str], queues: RunQueues
) -> set[str]:
    """The upload route of each index pipeline of ``targets`` (:func:`upload_targets`), matched before its
    JSON route, the runs in the indexing pipeline's queue; their paths."""
    paths = set()
    for route, target in targets.items():
        wrapper = wrappers[target]
        assert isinstance(wrapper, IndexWrapper)  # upload_targets names index pipelines only
        path = f"/{route}/run"
        endpoint = _upload_endpoint(target, wrapper, queues.for_spec(wrapper.spec))
        app.router.routes.insert(0, _UploadRoute(path, endpoint, methods=["POST"]))
        paths.add(path)
    return paths
