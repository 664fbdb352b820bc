"""``HaystackRetriever``: a LangChain retriever that answers with a pipeline file or a retriever component."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import PrivateAttr

from dpr_components.langchain.documents import to_langchain_document
from dpr_components.langchain.search import ComponentSearch, PipelineSearch
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.pipeline_requests.inputs import check_filters, unknown_input
from dpr_components.utils.validation import check_positive_int

CALL_INPUTS = ("k", "filters")  # what a call may give besides the query


def _check_k(k: Any) -> int | None:
    return None if k is None else check_positive_int("k", k)


def _check_call(unknown: dict[str, Any]) -> None:
    """A call's keyword the retriever does not take is refused as every front end refuses an unknown input."""
    if unknown:
        raise TypeError(unknown_input(next(iter(unknown)), CALL_INPUTS, owner="HaystackRetriever.invoke"))


class HaystackRetriever(BaseRetriever):
    """Documents for a query from a Haystack retriever component or pipeline, as LangChain Documents.

    Give either ``component`` (``DenseRetriever``, ``BM25Retriever``, ``HybridRetriever`` or any
    Haystack retriever taking a ``query``) or ``pipeline`` (a built Haystack ``Pipeline``; see
    :meth:`from_pipeline` to load a YAML file). ``k`` is the number of documents (default: the
    component's own ``top_k``) and ``filters`` a Haystack filter dict; both can also be given per
    call (``retriever.invoke(query, k=3, filters=...)``), where they replace these settings.

    Each document's ``metadata`` holds its Haystack ``meta`` (the ``title`` among it), ``id`` and
    ``score``. ``ainvoke`` awaits the component's (or pipeline's) ``run_async``."""

    component: Any = None
    """A retriever component; not with ``pipeline``."""
    pipeline: Any = None
    """A Haystack ``Pipeline`` with a ``query`` input; not with ``component``."""
    output: str | None = None
    """For a pipeline: the component whose documents are returned (default: the one result component with them)."""
    k: int | None = None
    """How many documents to return (default: the component's ``top_k``)."""
    filters: dict[str, Any] | None = None
    """Haystack filters applied to every search, e.g. ``{"field": "meta.title", "operator": "==", "value": "Hamlet"}``."""

    _search: ComponentSearch | PipelineSearch = PrivateAttr()

    def __init__(self, **settings: Any) -> None:
        unknown = sorted(set(settings) - set(type(self).model_fields))
        if unknown:
            known = sorted(type(self).model_fields)
            raise TypeError(f"{type(self).__name__} has no setting {unknown[0]!r}; its settings are {known}")
        component, pipeline, output = settings.get("component"), settings.get("pipeline"), settings.get("output")
        if (component is None) == (pipeline is None):
            raise ValueError("give either a retriever component (component=...) or a pipeline (pipeline=...), not both")
        if output is not None and pipeline is None:
            raise ValueError("output names a pipeline component: give it with pipeline=...")
        _check_k(settings.get("k"))
        check_filters(settings.get("filters"))
        search: ComponentSearch | PipelineSearch
        if component is not None:
            search = ComponentSearch(component)
        else:
            search = PipelineSearch(pipeline, output)
            settings["output"] = search.output
        super().__init__(**settings)
        self._search = search

    @classmethod
    def from_component(
        cls, component: Any, k: int | None = None, filters: dict[str, Any] | None = None, **settings: Any
    ) -> HaystackRetriever:
        """A retriever over one retriever component (warmed up on first use)."""
        return cls(component=component, k=k, filters=filters, **settings)

    @classmethod
    def from_pipeline(
        cls,
        path: str | Path,
        *,
        store: str | None = None,
        overrides: list[str] | None = None,
        allow_network: bool = False,
        output: str | None = None,
        k: int | None = None,
        filters: dict[str, Any] | None = None,
        **settings: Any,
    ) -> HaystackRetriever:
        """A retriever over the pipeline file ``path`` (e.g. ``pipelines/search.yml``, or a packaged name such as
        ``search``), built as ``haystack run``
        builds it: the same checks, ``store`` replacing every embedded store's folder (which must hold a store),
        ``overrides`` as ``--set`` (``["hybrid.weight=20"]``) and ``allow_network`` as ``--allow-network``."""
        pipeline = load_pipeline(
            path, store=store, overrides=overrides, allow_network=allow_network, require_stores=True
        )
        return cls(pipeline=pipeline, output=output, k=k, filters=filters, **settings)

    def _settings(self, k: int | None, filters: dict[str, Any] | None) -> tuple[int | None, dict[str, Any] | None]:
        """The call's ``k`` and filters, else the retriever's."""
        return (
            self.k if k is None else _check_k(k),
            self.filters if filters is None else check_filters(filters),
        )

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,  # noqa: ARG002 - LangChain's signature
        k: int | None = None,
        filters: dict[str, Any] | None = None,
        **unknown: Any,
    ) -> list[Document]:
        _check_call(unknown)
        found = self._search.search(query, *self._settings(k, filters))
        return [to_langchain_document(document) for document in found]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,  # noqa: ARG002 - LangChain's signature
        k: int | None = None,
        filters: dict[str, Any] | None = None,
        **unknown: Any,
    ) -> list[Document]:
        _check_call(unknown)
        found = await self._search.search_async(query, *self._settings(k, filters))
        return [to_langchain_document(document) for document in found]
