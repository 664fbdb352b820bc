"""The Elasticsearch variants against a real server: set ELASTICSEARCH_URL to run them.

Start one with Docker, for example:
    docker run -p 9200:9200 -e discovery.type=single-node -e xpack.security.enabled=false \\
        docker.elastic.co/elasticsearch/elasticsearch:8.15.0
    ELASTICSEARCH_URL=http://localhost:9200 ./run.sh test tests/document_stores/test_elasticsearch.py
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from dpr_components.cli.main import main
from tests.helpers.paths import PIPELINES

URL = os.environ.get("ELASTICSEARCH_URL")
pytestmark = [
    pytest.mark.elasticsearch,
    pytest.mark.skipif(not URL, reason="ELASTICSEARCH_URL is not set: no Elasticsearch server to test against"),
]


@pytest.fixture()
def es_index(small_corpus_file: Path, tiny_st_dir: Path):
    from haystack_integrations.document_stores.elasticsearch import (
        ElasticsearchDocumentStore,
    )

    index = f"dpr-test-{uuid.uuid4().hex[:8]}"
    code = main(
        [
            "run",
            str(PIPELINES / "index_elasticsearch.yml"),
            "--allow-network",
            "--input",
            f"path={small_corpus_file}",
            "--set",
            f"writer.document_store.hosts={URL}",
            "--set",
            f"writer.document_store.index={index}",
            "--set",
            f"embedder.model={tiny_st_dir}",
            "--set",
            "embedder.cache_dir=null",
        ]
    )
    assert code == 0
    store = ElasticsearchDocumentStore(hosts=URL, index=index)
    store.client.indices.refresh(index=index)
    yield index
    store.client.indices.delete(index=index)


def _es_args(index: str, model: Path) -> list[str]:
    args = ["--allow-network"]
    for component in ("bm25", "dense", "ranker"):
        args += [
            "--set",
            f"{component}.document_store.hosts={URL}",
            "--set",
            f"{component}.document_store.index={index}",
        ]
    return [*args, "--set", f"dense.model={model}"]


def test_hybrid_search_on_elasticsearch(es_index: str, tiny_st_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _es_args(es_index, tiny_st_dir)
    assert (
        main(
            [
                "run",
                str(PIPELINES / "search_elasticsearch.yml"),
                *args,
                "-q",
                "who wrote hamlet",
                "--top-k",
                "3",
                "--json",
            ]
        )
        == 0
    )
    documents = json.loads(capsys.readouterr().out)["ranker"]["documents"]
    assert documents[0]["id"] == "hamlet#0"
    assert documents[0]["meta"]["bm25_score"] > 0 and documents[0]["meta"]["dense_score"] is not None


def test_bm25_retriever_on_elasticsearch(es_index: str) -> None:
    from haystack_integrations.document_stores.elasticsearch import (
        ElasticsearchDocumentStore,
    )

    from haystack_integrations.components.retrievers.dpr.bm25_retriever import BM25Retriever

    retriever = BM25Retriever(document_store=ElasticsearchDocumentStore(hosts=URL, index=es_index), top_k=2)
    assert retriever.run(query="highest mountain everest")["documents"][0].id == "everest#0"
