"""PassageEmbedder: the passage encoder E_P as a Haystack component, stamping its weights digest."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from haystack import Document, component, default_to_dict
from haystack.utils import ComponentDevice

from dpr_components.embedders.encoder_component import ENCODER_SETTINGS, EncoderComponent
from dpr_components.encoders.batch_encoding import cache_for, encode_passages_cached
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.encoders.encoder_settings import Backend, Pooling, Precision, TitleMode
from dpr_components.encoders.model_locks import model_lock
from dpr_components.encoders.pairing import META_FIELD, weights_digest
from dpr_components.utils.devices import device_parameter
from dpr_components.utils.init_parameters import init_parameters


@component
class PassageEmbedder(EncoderComponent):
    """Encodes documents with the passage encoder E_P (title from ``meta[title_field]`` plus content).

    With ``cache_dir`` set, vectors are kept on disk as they are made: an interrupted indexing
    run resumes where it stopped and re-indexing with the same encoder costs nothing.
    ``backend="auto"`` (the default) runs the model with OpenVINO's CPU kernels when they pass the
    accuracy bound on this CPU, else with torch: OpenVINO is the faster exact back end on every CPU
    measured (docs/benchmarks/encoding/backends.md); the choice is logged once per process, ``backend="torch"``
    or ``"openvino"`` (or ``DPR_ENCODE_BACKEND``) overrides it, and each back end's vectors are cached apart.
    ``device`` is Haystack's ``ComponentDevice``; only the CPU (the default) is accepted.

    Usage example (vectors for any Haystack store; our ``DenseRetriever`` or Haystack's embedding
    retrievers search them with the paired question encoder):

    ```python
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    embedder = PassageEmbedder(model="bundled:all-MiniLM-L6-v2")
    embedder.warm_up()
    documents = [Document(content="Hamlet is a tragedy by William Shakespeare.", meta={"title": "Hamlet"})]
    InMemoryDocumentStore().write_documents(embedder.run(documents=documents)["documents"])
    ```
    """

    def __init__(
        self,
        *,
        model: str = BUNDLED_MINILM,
        pooling: Pooling = "auto",
        normalize: bool | None = None,
        max_length: int | None = None,
        title_mode: TitleMode = "pair",
        precision: Precision = "auto",
        batch_size: int = 64,
        title_field: str = "title",
        cache_dir: str | None = None,
        progress_bar: bool = True,
        backend: Backend = "auto",
        device: ComponentDevice | None = None,
    ) -> None:
        self._init_encoder(
            model, pooling, normalize, max_length, precision, batch_size, title_mode, backend=backend, device=device
        )
        self.backend = backend
        self.title_mode = title_mode
        self.title_field = title_field
        self.cache_dir = cache_dir
        self.progress_bar = progress_bar

    def to_dict(self) -> dict[str, Any]:
        passage_settings = "title_mode title_field cache_dir progress_bar backend"
        return default_to_dict(
            self, **init_parameters(self, f"{ENCODER_SETTINGS} {passage_settings}"), **device_parameter(self.device)
        )

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Embed each document's content with E_P, with its title (``meta[title_field]``) as ``title_mode`` says.

        :param documents: the passages to embed.
        :returns: ``documents``: copies of the documents with their ``embedding`` set and, when the
            model folder holds weights, ``meta["passage_encoder"]`` holding the weights digest.
        :raises TypeError: when ``documents`` is not a list of Documents.
        :raises ValueError: when a document has no text.
        """
        return {"documents": self._embed(self._checked(documents))}

    @component.output_types(documents=list[Document])
    async def run_async(self, documents: list[Document]) -> dict[str, Any]:
        """Asynchronous version of :meth:`run`, encoding in a worker thread so the event loop is not blocked."""
        return {"documents": await asyncio.to_thread(self._embed, self._checked(documents))}

    @staticmethod
    def _checked(documents: list[Document]) -> list[Document]:
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise TypeError("PassageEmbedder expects a list of Documents")
        empty = [d.id for d in documents if not (d.content or "").strip()]
        if empty:
            raise ValueError(f"{len(empty)} documents have no text to embed, e.g. {empty[:3]}")
        return documents

    def _embed(self, documents: list[Document]) -> list[Document]:
        """The documents with their vectors, stamped with the encoder's weights digest."""
        titles = [
            d.meta.get(self.title_field) if isinstance(d.meta.get(self.title_field), str) else None for d in documents
        ]
        with model_lock(("encoder", self.encoder.settings)):
            cache = cache_for(self.encoder, self.cache_dir) if self.cache_dir else None
            vectors = encode_passages_cached(
                self.encoder, [d.content or "" for d in documents], titles, cache, show_progress=self.progress_bar
            )
        stamp = self._weights_digest()
        return [
            dataclasses.replace(d, embedding=v.tolist(), meta={**d.meta, META_FIELD: stamp} if stamp else d.meta)
            for d, v in zip(documents, vectors, strict=True)
        ]

    def _weights_digest(self) -> str | None:
        if not hasattr(self, "_digest"):
            self._digest = weights_digest(self.model)
        return self._digest
