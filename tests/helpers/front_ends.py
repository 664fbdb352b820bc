"""The three front ends over one folder of packaged pipelines on the tiny models, for the tests that send the
same request through each: the command line (``haystack run`` on the folder's files), the HTTP server (a test
client) and the LangChain retriever."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.testclient import TestClient

from dpr_components.cli.main import main
from dpr_components.serving.app import build_app
from dpr_components.serving.security import ServerPolicy
from tests.helpers.corpora import SMALL_CORPUS, write_jsonl
from tests.helpers.paths import PIPELINES
from tests.helpers.serving import write_pipelines

if TYPE_CHECKING:
    from dpr_components.langchain import HaystackRetriever


@dataclass
class FrontEnds:
    """The pipelines ``folder`` (for the command line), its server's test ``client`` and a LangChain retriever
    per query pipeline."""

    folder: Path
    client: TestClient
    retrievers: dict[str, HaystackRetriever]


def indexed_pipelines(work: Path, names: Collection[str], encoder: Path, reader: Path, bert: Path) -> Path:
    """The small corpus indexed into ``work/index`` with pipelines/index.yml on the tiny ``encoder``, and the
    pipelines ``names`` of pipelines/ on that store (as :func:`write_pipelines` writes them) in
    ``work/pipelines``, which is returned."""
    corpus = write_jsonl(work / "corpus.jsonl", SMALL_CORPUS)
    store = work / "index"
    settings = [f"embedder.model={encoder}", "embedder.cache_dir=null", "embedder.progress_bar=false"]
    command = ["run", str(PIPELINES / "index.yml"), "--input", f"path={corpus}", "--store", str(store)]
    assert main(command + [part for setting in settings for part in ("--set", setting)]) == 0
    folder = work / "pipelines"
    write_pipelines(folder, store, encoder, reader, bert, work / "run")
    for path in folder.iterdir():
        if path.stem not in names:
            path.unlink()
    return folder


def front_ends(folder: Path, served: Collection[str], outputs: dict[str, str | None], **options: Any) -> FrontEnds:
    """The server over ``folder`` (``build_app``'s ``options``, the default policy), which must deploy the
    pipelines ``served``, and a retriever on each pipeline of ``outputs`` returning the documents of its
    stage (``None``: the pipeline's own)."""
    from dpr_components.langchain import HaystackRetriever

    app, deployment = build_app(folder, policy=ServerPolicy(), **options)
    assert sorted(deployment.deployed) == sorted(served), deployment.skipped
    client = TestClient(app, base_url="http://127.0.0.1:1416", raise_server_exceptions=False)
    retrievers = {
        name: HaystackRetriever.from_pipeline(folder / f"{name}.yml", output=output) for name, output in outputs.items()
    }
    return FrontEnds(folder, client, retrievers)
