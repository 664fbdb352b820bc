"""Arguments of ``haystack run`` over the packaged pipelines, with local models and a test store."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.paths import PIPELINES

QUESTION = "who wrote hamlet"


def index_args(
    corpus: Path | str, store: Path | str, encoder: Path | str | None, *extra: str, cache_dir: Path | str = "null"
) -> list[str]:
    """``haystack run pipelines/index.yml`` arguments: ``corpus`` into ``store`` with the passage ``encoder`` (the
    file's own, the bundled model, when None)."""
    return [
        "run",
        str(PIPELINES / "index.yml"),
        "--input",
        f"path={corpus}",
        "--store",
        str(store),
        *embedder_sets(encoder, cache_dir),
        *extra,
    ]


def embedder_sets(encoder: Path | str | None, cache_dir: Path | str = "null") -> list[str]:
    """``--set`` arguments of index.yml's embedder: the passage ``encoder`` (unless None), its cache, no progress bar."""
    model = ["--set", f"embedder.model={encoder}"] if encoder is not None else []
    return [*model, "--set", f"embedder.cache_dir={cache_dir}", "--set", "embedder.progress_bar=false"]


def dense_args(store: Path | str, encoder: Path | str, *extra: str) -> list[str]:
    """``haystack run pipelines/dense.yml`` arguments: QUESTION against ``store`` with the question ``encoder``."""
    return [
        "run",
        str(PIPELINES / "dense.yml"),
        "--store",
        str(store),
        "-q",
        QUESTION,
        "--set",
        f"dense.model={encoder}",
        *extra,
    ]


def qa_args(store: Path | str, encoder: Path | str, reader: Path | str, *extra: str) -> list[str]:
    """``haystack run pipelines/qa.yml`` arguments: QUESTION against ``store`` with ``encoder``, and ``reader``
    to re-rank and to read."""
    return [
        "run",
        str(PIPELINES / "qa.yml"),
        "--store",
        str(store),
        "-q",
        QUESTION,
        "--set",
        f"hybrid.model={encoder}",
        "--set",
        f"reranker.model={reader}",
        "--set",
        f"reader.model={reader}",
        *extra,
    ]


def eval_args(
    pipelines: list[str], questions: Path | str, store: Path | str, out: Path | str, *extra: str
) -> list[str]:
    """``haystack eval`` arguments: the packaged ``pipelines`` (file names) on ``questions`` over ``store``."""
    files = [str(PIPELINES / name) for name in pipelines]
    return ["eval", *files, "--questions", str(questions), "--store", str(store), *extra, "--out", str(out)]


def index_files_args(
    folder: Path | str, store: Path | str, encoder: Path | str | None, *extra: str, cache_dir: Path | str = "null"
) -> list[str]:
    """``haystack run pipelines/index_files.yml`` arguments: the documents of ``folder`` into ``store`` with the
    passage ``encoder`` (the file's own when None)."""
    return [
        "run",
        str(PIPELINES / "index_files.yml"),
        "--input",
        f"path={folder}",
        "--store",
        str(store),
        *embedder_sets(encoder, cache_dir),
        *extra,
    ]


def adapt_args(store: Path | str, out: Path | str, encoder: Path | str, teacher: Path | str, *extra: str) -> list[str]:
    """``haystack run adapt`` arguments: adapt question ``encoder`` to ``store`` into ``out``, ``teacher`` scoring
    the top 5 candidates, batches of 4, no progress bar."""
    return [
        "run",
        "adapt",
        "--store",
        str(store),
        "--out",
        str(out),
        "--set",
        f"adapter.model={encoder}",
        "--set",
        f"adapter.teacher_model={teacher}",
        "--set",
        "adapter.top_k=5",
        "--set",
        "adapter.settings.batch_size=4",
        "--set",
        "adapter.progress_bar=false",
        *extra,
    ]
