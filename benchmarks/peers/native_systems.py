"""The two systems of ``benchmarks/peers/haystack_native.py``, built from the same weights.

Ours are the packaged pipeline files (``qa``, ``qa_fast``, ``bm25``, ``dense``, ``index``, or their copies in
a folder). Haystack's side is what a Haystack 3 user composes from Haystack's own components and its
integrations, with our models exported for them (``haystack export-st``, ``export-qa``,
``export-ranker``): ``SentenceTransformersDocumentEmbedder`` → ``DocumentWriter`` into
``InMemoryDocumentStore`` (saved with ``save_to_disk``); at query time ``InMemoryBM25Retriever`` and
``SentenceTransformersTextEmbedder`` + ``InMemoryEmbeddingRetriever``, joined by ``DocumentJoiner``,
then ``SentenceTransformersSimilarityRanker`` and ``TransformersExtractiveReader``. Every setting the
two sides share (models, candidates per retriever, documents passed on, token limits) is read from our
pipeline files, so the difference is the components."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dpr_components.pipeline_files.loading import load_pipeline_spec

PIPELINES = ("qa", "qa_fast", "bm25", "dense", "index")
TITLE_FIELDS = ["title"]
FUSIONS = ("reciprocal_rank_fusion", "distribution_based_rank_fusion")


def pipeline_path(folder: str | None, name: str) -> str:
    """Our pipeline ``name``: ``folder/name.yml`` when a folder is given, else the packaged one."""
    return str(Path(folder) / f"{name}.yml") if folder else name


def _parameters(spec: dict[str, Any], component: str) -> dict[str, Any]:
    return dict(spec["components"][component].get("init_parameters", {}))


@dataclass(frozen=True)
class ReaderSide:
    """A reader's model and its token windows, as our pipeline file sets them."""

    model: str
    top_k: int
    max_length: int
    stride: int


@dataclass(frozen=True)
class NativeSettings:
    """What both sides share, read from our pipeline files (``qa``'s hybrid, re-ranker and reader,
    ``qa_fast``'s hybrid and reader, ``index``'s passage encoder)."""

    question_model: str
    passage_model: str
    candidates: int  # each retriever's list before fusion (our hybrid's ``candidates``)
    fused_top_k: int  # documents the fusion passes on in ``qa``
    fast_fused_top_k: int  # ... in ``qa_fast``
    ranker_model: str
    ranker_top_k: int
    ranker_max_length: int
    reader: ReaderSide
    fast_reader: ReaderSide

    @classmethod
    def from_pipelines(cls, folder: str | None) -> NativeSettings:
        """The settings of our pipeline files (packaged, or the copies in ``folder``)."""
        qa, fast = (load_pipeline_spec(pipeline_path(folder, name)) for name in ("qa", "qa_fast"))
        hybrid, ranker, fast_hybrid = (
            _parameters(qa, "hybrid"),
            _parameters(qa, "reranker"),
            _parameters(fast, "hybrid"),
        )
        embedder = _parameters(load_pipeline_spec(pipeline_path(folder, "index")), "embedder")

        def reader(spec: dict[str, Any]) -> ReaderSide:
            values = _parameters(spec, "reader")
            return ReaderSide(
                values["model"], values.get("top_k", 5), values.get("max_length", 256), values.get("stride", 64)
            )

        return cls(
            question_model=hybrid["model"], passage_model=embedder["model"], candidates=hybrid.get("candidates", 100),
            fused_top_k=hybrid.get("top_k", 10), fast_fused_top_k=fast_hybrid.get("top_k", 10),
            ranker_model=ranker["model"], ranker_top_k=ranker.get("top_k", 5),
            ranker_max_length=ranker.get("max_length", 256), reader=reader(qa), fast_reader=reader(fast),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NativeSettings:
        readers = {key: ReaderSide(**data[key]) for key in ("reader", "fast_reader")}
        return cls(**{**data, **readers})


@dataclass(frozen=True)
class Exports:
    """Our models as folders for Haystack's components."""

    question: Path  # SentenceTransformersTextEmbedder
    passage: Path  # SentenceTransformersDocumentEmbedder
    ranker: Path  # SentenceTransformersSimilarityRanker
    reader: Path  # TransformersExtractiveReader, qa's reader
    fast_reader: Path  # ... qa_fast's reader

    @classmethod
    def under(cls, folder: Path) -> Exports:
        return cls(*(folder / name for name in ("st-question", "st-passage", "ranker", "reader", "fast-reader")))


def export_models(settings: NativeSettings, folder: Path) -> Exports:
    """Export every model of ``settings`` into ``folder`` (an earlier export there is replaced)."""
    from dpr_components.export.cross_encoder import export_cross_encoder
    from dpr_components.export.qa_model import export_qa_model
    from dpr_components.export.sentence_transformers import export_sentence_transformers

    exports = Exports.under(folder)
    export_sentence_transformers(settings.question_model, exports.question, role="question")
    export_sentence_transformers(settings.passage_model, exports.passage, role="passage")
    export_cross_encoder(settings.ranker_model, exports.ranker, max_length=settings.ranker_max_length)
    export_qa_model(settings.reader.model, exports.reader)
    export_qa_model(settings.fast_reader.model, exports.fast_reader)
    return exports


@dataclass(frozen=True)
class RunFiles:
    """What a worker process needs: the shared settings, the exports, our store, Haystack's saved store."""

    settings: NativeSettings
    exports: Exports
    store: str
    haystack_store: Path
    pipelines: str | None
    st_backend: str = "torch"  # the sentence-transformers back end of Haystack's embedders and ranker
    fusion: str = FUSIONS[0]  # the joiner of Haystack's end-to-end pipelines

    def write(self, path: Path) -> Path:
        data = {**asdict(self), "settings": self.settings.to_dict()}
        path.write_text(json.dumps(data, default=str, indent=1), encoding="utf-8")
        return path

    @classmethod
    def read(cls, path: Path) -> RunFiles:
        data = json.loads(path.read_text(encoding="utf-8"))
        exports = Exports(**{key: Path(value) for key, value in data["exports"].items()})
        return cls(
            NativeSettings.from_dict(data["settings"]), exports, data["store"], Path(data["haystack_store"]),
            data["pipelines"], data["st_backend"], data["fusion"],
        )  # fmt: skip


def document_embedder(exports: Exports, backend: str) -> Any:
    """Haystack's passage embedder on our exported passage encoder, titles embedded as Haystack does."""
    from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder

    return SentenceTransformersDocumentEmbedder(
        model=str(exports.passage), meta_fields_to_embed=TITLE_FIELDS, progress_bar=False, backend=backend
    )


def haystack_indexing(exports: Exports, store: Any, backend: str) -> Any:
    """``SentenceTransformersDocumentEmbedder`` → ``DocumentWriter`` into ``store``."""
    from haystack import Pipeline
    from haystack.components.writers import DocumentWriter

    pipeline = Pipeline()
    pipeline.add_component("embedder", document_embedder(exports, backend))
    pipeline.add_component("writer", DocumentWriter(document_store=store))
    pipeline.connect("embedder.documents", "writer.documents")
    return pipeline


def new_haystack_store() -> Any:
    """An ``InMemoryDocumentStore`` scoring vectors as our store does (inner product)."""
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    return InMemoryDocumentStore(embedding_similarity_function="dot_product")


def load_haystack_store(path: Path) -> Any:
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    return InMemoryDocumentStore.load_from_disk(str(path))


def text_embedder(exports: Exports, backend: str) -> Any:
    from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder

    return SentenceTransformersTextEmbedder(model=str(exports.question), progress_bar=False, backend=backend)


def similarity_ranker(exports: Exports, top_k: int, backend: str) -> Any:
    """Haystack's cross-encoder ranker on our exported passage ranker, titles in front as the ranker reads them;
    raw scores (``scale_score=False``: the sigmoid changes no order), which map back to our logits."""
    from haystack_integrations.components.rankers.sentence_transformers import SentenceTransformersSimilarityRanker

    from dpr_components.export.cross_encoder import TITLE_SEPARATOR

    return SentenceTransformersSimilarityRanker(
        model=str(exports.ranker), top_k=top_k, meta_fields_to_embed=TITLE_FIELDS, embedding_separator=TITLE_SEPARATOR,
        scale_score=False, backend=backend,
    )  # fmt: skip


def extractive_reader(folder: Path, side: ReaderSide) -> Any:
    """Haystack's extractive reader on an exported reader, with its no-answer (off is read from the same answers)."""
    from haystack_integrations.components.readers.transformers import TransformersExtractiveReader

    return TransformersExtractiveReader(
        model=str(folder), top_k=side.top_k, max_seq_length=side.max_length, stride=side.stride, no_answer=True
    )


def haystack_qa(files: RunFiles, store: Any, fast: bool, fusion: str) -> Any:
    """The Haystack-native counterpart of ``qa`` (or of ``qa_fast``): BM25 and embedding retrieval of
    ``candidates`` each, ``DocumentJoiner`` with ``fusion``, (``qa`` only) the similarity ranker, then the
    extractive reader, each passing on as many documents as ours does."""
    from haystack import Pipeline
    from haystack.components.joiners import DocumentJoiner
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever

    settings, exports = files.settings, files.exports
    pipeline = Pipeline()
    pipeline.add_component("embedder", text_embedder(exports, files.st_backend))
    pipeline.add_component("embedding", InMemoryEmbeddingRetriever(document_store=store, top_k=settings.candidates))
    pipeline.add_component("bm25", InMemoryBM25Retriever(document_store=store, top_k=settings.candidates))
    fused = settings.fast_fused_top_k if fast else settings.fused_top_k
    pipeline.add_component("joiner", DocumentJoiner(join_mode=fusion, top_k=fused))
    pipeline.connect("embedder.embedding", "embedding.query_embedding")
    pipeline.connect("bm25.documents", "joiner.documents")
    pipeline.connect("embedding.documents", "joiner.documents")
    last = "joiner"
    if not fast:
        pipeline.add_component("ranker", similarity_ranker(exports, settings.ranker_top_k, files.st_backend))
        pipeline.connect("joiner.documents", "ranker.documents")
        last = "ranker"
    side = settings.fast_reader if fast else settings.reader
    pipeline.add_component("reader", extractive_reader(exports.fast_reader if fast else exports.reader, side))
    pipeline.connect(f"{last}.documents", "reader.documents")
    return pipeline


def haystack_qa_inputs(pipeline: Any, question: str) -> dict[str, dict[str, Any]]:
    """``pipeline.run``'s inputs for ``question`` (the text embedder takes ``text``, the others ``query``)."""
    inputs: dict[str, dict[str, Any]] = {"embedder": {"text": question}, "bm25": {"query": question}}
    for name in ("ranker", "reader"):
        if name in pipeline.graph.nodes:
            inputs[name] = {"query": question}
    return inputs


def our_indexing(folder: str | None, store_path: Path) -> tuple[Any, Any]:
    """Our ``index`` pipeline's embedder (no vector cache, no progress bar) → ``PassageWriter`` into a new
    store at ``store_path`` with the file's store settings; returns the pipeline and the store."""
    from haystack import Pipeline

    from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder
    from haystack_integrations.components.writers.dpr.passage_writer import PassageWriter
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    spec = load_pipeline_spec(pipeline_path(folder, "index"))
    embedder = {**_parameters(spec, "embedder"), "cache_dir": None, "progress_bar": False}
    store_settings = _parameters(spec, "writer")["document_store"].get("init_parameters", {})
    store = EmbeddedDocumentStore(**{**store_settings, "path": str(store_path)})
    pipeline = Pipeline()
    pipeline.add_component("embedder", PassageEmbedder(**embedder))
    pipeline.add_component("writer", PassageWriter(document_store=store))
    pipeline.connect("embedder.documents", "writer.documents")
    return pipeline, store
