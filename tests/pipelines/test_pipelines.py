"""The YAML pipelines, the components in them and the ``haystack`` command, on tiny models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from haystack import Document, Pipeline

from dpr_components.cli.main import main
from dpr_components.hybrid_fusion import rrf_scores
from dpr_components.pipeline_files.loading import ALLOWED_MODULES, load_pipeline
from haystack_integrations.components.converters.dpr.corpus_reader import CorpusReader
from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder
from haystack_integrations.components.embedders.dpr.question_embedder import QuestionEmbedder
from haystack_integrations.components.preprocessors.dpr.dpr_passage_splitter import DPRPassageSplitter
from haystack_integrations.components.rankers.dpr.hybrid_ranker import HybridRanker
from haystack_integrations.components.retrievers.dpr.bm25_retriever import BM25Retriever
from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.commands import eval_args, index_args
from tests.helpers.documents import lexical_and_semantic_store
from tests.helpers.paths import PIPELINES


def _search_args(store: Path, model: Path, *extra: str) -> list[str]:
    return ["--store", str(store), "--set", f"dense.model={model}", *extra]


def test_index_pipeline_writes_passages_and_is_idempotent(
    indexed_store: Path, small_corpus_file: Path, tiny_st_dir: Path
) -> None:
    store = EmbeddedDocumentStore(path=str(indexed_store))
    assert store.count_documents() == 6  # the long Jupiter text makes two passages
    assert store.get_documents_by_id(["jupiter#1"])[0].meta["title"] == "Jupiter"
    main(index_args(small_corpus_file, indexed_store, tiny_st_dir))
    assert store.count_documents() == 6


def test_bm25_pipeline_finds_hamlet(indexed_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            ["run", str(PIPELINES / "bm25.yml"), "--store", str(indexed_store), "--query", "who wrote hamlet", "--json"]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["bm25"]["documents"][0]["id"] == "hamlet#0"
    assert "embedding" not in result["bm25"]["documents"][0]


@pytest.mark.parametrize("pipeline", ["dense.yml", "search.yml"])
def test_dense_and_hybrid_pipelines_run(
    indexed_store: Path, tiny_st_dir: Path, pipeline: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A random tiny encoder carries no signal: weight it down so BM25 decides the hybrid ranking.
    if pipeline == "search.yml":
        args = ["--store", str(indexed_store), "--set", f"hybrid.model={tiny_st_dir}", "--set", "hybrid.weight=0.001"]
    else:
        args = _search_args(indexed_store, tiny_st_dir)
    args += ["--query", "who wrote hamlet", "--top-k", "3", "--json"]
    assert main(["run", str(PIPELINES / pipeline), *args]) == 0
    result = json.loads(capsys.readouterr().out)
    documents = next(iter(result.values()))["documents"]
    assert len(documents) == 3
    if pipeline == "search.yml":
        assert documents[0]["id"] == "hamlet#0"  # BM25 dominates a random tiny encoder
        assert {"bm25_score", "dense_score"} <= set(documents[0]["meta"])


def test_table_output_and_batch_file(indexed_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batch = tmp_path / "queries.jsonl"
    batch.write_text('who wrote hamlet\n{"query": "highest mountain", "top_k": 1}\n"honey bees"\n', encoding="utf-8")
    assert (
        main(["run", str(PIPELINES / "bm25.yml"), "--store", str(indexed_store), "--batch", str(batch), "--json"]) == 0
    )
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["line"] for line in lines] == [1, 2, 3]
    assert lines[1]["result"]["bm25"]["documents"][0]["id"] == "everest#0"
    assert len(lines[1]["result"]["bm25"]["documents"]) == 1
    assert (
        main(["run", str(PIPELINES / "bm25.yml"), "--store", str(indexed_store), "-q", "mount everest", "--top-k", "2"])
        == 0
    )
    table = capsys.readouterr().out
    assert "Mount Everest" in table and "score" in table


@pytest.mark.parametrize(
    "args, message",
    [
        (["-q", "   "], "the query is empty"),
        (["-q", "x", "--top-k", "0"], "--top-k 0: must be a whole number from 1"),
        (["--input", "nonsense=1", "-q", "x"], "no input named 'nonsense'"),
        ([], "no inputs"),
        (["-q", "x", "--set", "nocomp.top_k=3"], "no component 'nocomp'"),
    ],
)
def test_bad_cli_input_is_a_clear_error(
    indexed_store: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(PIPELINES / "bm25.yml"), "--store", str(indexed_store), *args]) == 2
    assert message in capsys.readouterr().err


def test_missing_pipeline_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "no/such.yml", "-q", "x"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_encoder_index_dimension_mismatch(indexed_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The store holds 32-d vectors from the tiny encoder; the bundled 384-d MiniLM must be refused."""
    assert main(["run", str(PIPELINES / "dense.yml"), "--store", str(indexed_store), "-q", "who wrote hamlet"]) == 2
    assert "passage encoder" in capsys.readouterr().err  # a pairing or dimension mismatch, named either way


def test_missing_model_folder(indexed_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _search_args(indexed_store, tmp_path / "no-model", "-q", "x")
    assert main(["run", str(PIPELINES / "dense.yml"), *args]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_pipelines_load_in_plain_haystack(indexed_store: Path) -> None:
    for path in PIPELINES.glob("*.yml"):
        # Elasticsearch stores connect lazily: their pipelines build without a server.
        uses_store = "EmbeddedDocumentStore" in path.read_text(encoding="utf-8")
        pipeline = load_pipeline(path, store=str(indexed_store) if uses_store else None, allow_network=not uses_store)
        again = Pipeline.loads(pipeline.dumps(), allowed_modules=ALLOWED_MODULES)
        first, second = pipeline.to_dict(), again.to_dict()
        assert first["components"] == second["components"]
        key = lambda c: (c["sender"], c["receiver"])  # noqa: E731
        assert sorted(first["connections"], key=key) == sorted(second["connections"], key=key)
    text = (PIPELINES / "bm25.yml").read_text().replace("indexes/example", str(indexed_store))
    plain = Pipeline.loads(text, allowed_modules=["dpr_components"])
    assert plain.run({"bm25": {"query": "hamlet"}})["bm25"]["documents"][0].id == "hamlet#0"


def test_component_round_trips(tmp_path: Path, tiny_st_dir: Path) -> None:
    store = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    components = [
        BM25Retriever(document_store=store, top_k=7),
        DenseRetriever(document_store=store, model=str(tiny_st_dir), top_k=3),
        HybridRanker(document_store=store, mode="dpr", weight=20.0, top_k=4),
        HybridRanker(mode="rrf", rrf_k=10),
        QuestionEmbedder(model=str(tiny_st_dir)),
        PassageEmbedder(model=str(tiny_st_dir), cache_dir="c"),
        CorpusReader(format="tsv"),
        DPRPassageSplitter(words_per_passage=50),
    ]
    for component in components:
        data = component.to_dict()
        assert type(component).from_dict(json.loads(json.dumps(data))).to_dict() == data


def test_warm_up_is_idempotent(tmp_path: Path, tiny_st_dir: Path) -> None:
    retriever = DenseRetriever(document_store=EmbeddedDocumentStore(), model=str(tiny_st_dir))
    retriever.warm_up()
    model = retriever.embedder.encoder._model
    retriever.warm_up()
    assert retriever.embedder.encoder._model is model


def test_dense_retriever_accepts_an_embedding() -> None:
    store = EmbeddedDocumentStore()
    store.write_documents(
        [Document(id="a", content="a", embedding=[1.0, 0.0]), Document(id="b", content="b", embedding=[0.0, 1.0])]
    )
    result = DenseRetriever(document_store=store).run(query_embedding=[0.0, 2.0], top_k=1)
    assert result["documents"][0].id == "b" and result["query_embedding"] == [0.0, 2.0]
    with pytest.raises(ValueError, match="needs a query"):
        DenseRetriever(document_store=store).run()


def test_hybrid_scores_documents_found_by_one_retriever_only() -> None:
    store = lexical_and_semantic_store()
    bm25 = store.bm25_retrieval("zebra", top_k=1)
    dense = store.embedding_retrieval([1.0, 0.0], top_k=1)
    assert [d.id for d in bm25] == ["lex"] and [d.id for d in dense] == ["sem"]
    ranker = HybridRanker(document_store=store, weight=100.0, top_k=2)
    out = ranker.run(bm25_documents=bm25, dense_documents=dense, query="zebra", query_embedding=[1.0, 0.0])["documents"]
    assert [d.id for d in out] == ["sem", "lex"]
    sem, lex = out
    assert sem.meta["bm25_score"] == 0.0 and sem.meta["dense_score"] == pytest.approx(1.0)
    assert lex.meta["dense_score"] == pytest.approx(0.0) and lex.meta["bm25_score"] > 0
    assert lex.score == pytest.approx(lex.meta["bm25_score"])
    low = ranker.run(bm25_documents=bm25, dense_documents=dense, query="zebra", query_embedding=[1.0, 0.0], weight=0.0)
    assert low["documents"][0].id == "lex"


def test_rrf() -> None:
    assert rrf_scores([["a", "b"], ["b", "c"]], k=1) == pytest.approx({"a": 0.5, "b": 1 / 3 + 0.5, "c": 1 / 3})
    ranker = HybridRanker(mode="rrf", top_k=2)
    docs = lambda *ids: [Document(id=i, content=i) for i in ids]  # noqa: E731
    assert [d.id for d in ranker.run(docs("a", "b"), docs("b", "c"))["documents"]] == ["b", "a"]
    assert ranker.run([], [])["documents"] == []


def test_hybrid_needs_store_and_inputs() -> None:
    with pytest.raises(ValueError, match="needs the document_store"):
        HybridRanker(mode="dpr")
    ranker = HybridRanker(document_store=EmbeddedDocumentStore())
    with pytest.raises(ValueError, match="query text and the query_embedding"):
        ranker.run([Document(id="a", content="a")], [], query="a")


def test_eval_and_fit_lambda_commands(
    indexed_store: Path, tiny_st_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"id": "1", "question": "who wrote hamlet", "answers": ["Shakespeare"]}\n'
        '{"id": "2", "question": "highest mountain on earth", "answers": ["Everest"]}\n',
        encoding="utf-8",
    )
    out = tmp_path / "report"
    settings = ["--set", f"hybrid.model={tiny_st_dir}", "--set", "hybrid.weight=0.001", "--top-k", "5"]
    assert main(eval_args(["search.yml"], questions, indexed_store, out, *settings)) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["systems"]["search"]["top_k_accuracy"]["1"] == 100.0
    assert (out / "topk_accuracy.png").stat().st_size > 1000
    lam_out = tmp_path / "lam"
    assert (
        main(
            [
                "fit-lambda",
                str(PIPELINES / "search.yml"),
                "--questions",
                str(questions),
                "--store",
                str(indexed_store),
                "--set",
                f"hybrid.model={tiny_st_dir}",
                "--out",
                str(lam_out),
            ]
        )
        == 0
    )
    fitted = json.loads((lam_out / "lambda.json").read_text())
    assert fitted["curve"][0]["weight"] == 0.0 and (lam_out / "lambda.png").exists()
    capsys.readouterr()


def test_json_output_refuses_non_finite_numbers() -> None:
    from dpr_components.cli.output_format import to_json_line

    good = to_json_line({"bm25": {"documents": [Document(id="a", content="x\x9by\u202e", score=1.5)]}})
    assert json.loads(good)["bm25"]["documents"][0]["content"] == "x\x9by\u202e"
    assert "\x9b" not in good and "\u202e" not in good
    with pytest.raises(ValueError, match=r"result\.bm25\.documents\[0\]\.score is not a finite number"):
        to_json_line({"bm25": {"documents": [Document(id="a", content="x", score=float("nan"))]}})


def test_parameter_type_checks() -> None:
    from typing import Any, Literal

    from dpr_components.utils.type_checks import type_mismatch

    assert type_mismatch(3, int | None) is None and type_mismatch(None, int | None) is None
    assert type_mismatch(True, int) == "expected an integer, got True"
    assert type_mismatch(2, float) is None and type_mismatch(float("inf"), float) is not None
    assert type_mismatch("rrf", Literal["dpr", "rrf"]) is None
    assert type_mismatch([1.0, "x"], list[float]) == "expected a list, got [1.0, 'x']"
    assert type_mismatch({"a": 1}, dict[str, Any]) is None
    assert type_mismatch({"type": "some.Store"}, EmbeddedDocumentStore) is None  # built by from_dict: not checked
    assert type_mismatch({"id": "a"}, list[Document], check_classes=True) == "expected a list, got {'id': 'a'}"
