"""The adaptation run on a tiny store with a stand-in first stage and teacher: a time bound met while scoring
or while training stops with what a resumed run needs and still writes a paired encoder; the same run again
finishes it; the store's problems are one line each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Document

from dpr_components.encoder_training.adaptation import AdaptationPlan, adapt_question_encoder
from dpr_components.encoder_training.pseudo_queries import PseudoQuerySettings
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.pairing import read_pair_file
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.runs.deadline import Deadline
from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

pytestmark = pytest.mark.usefixtures("one_thread")


class StoreFirstStage:
    """The store's passages by BM25 (the store's own index), at most ``top_k``."""

    def __init__(self, store: EmbeddedDocumentStore) -> None:
        self.store = store

    def run(self, query: str, top_k: int | None = None) -> dict[str, Any]:
        return {"documents": self.store.bm25_retrieval(query, top_k=top_k or 5)}


class OverlapTeacher:
    """Scores a passage by the words it shares with the query."""

    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, Any]:
        words = set(query.lower().split())
        scored = [
            Document(id=d.id, content=d.content, score=float(len(words & set((d.content or "").lower().split()))))
            for d in documents
        ]
        return {"documents": scored}


class CallsDeadline(Deadline):
    """Passes from its ``after``-th question on (a clock that counts the safe points)."""

    def __init__(self, after: int) -> None:
        super().__init__(None)
        self.after, self.calls = after, 0

    def passed(self) -> bool:
        self.calls += 1
        self.reached = self.reached or self.calls >= self.after
        return self.reached


def _plan(store: Path, encoder: Path, **training: Any) -> AdaptationPlan:
    return AdaptationPlan(
        store=EmbeddedDocumentStore(path=str(store)),
        store_path=str(store),
        model=str(encoder),
        passage_model=str(encoder),
        queries=PseudoQuerySettings(method="ict"),
        top_k=5,
        training={"batch_size": 4, "learning_rate": 1e-2, "warmup_ratio": 0.0, **training},
    )


def _scorers(store: Path) -> Any:
    return lambda: (StoreFirstStage(EmbeddedDocumentStore(path=str(store))), OverlapTeacher())


def _question_vector(model: Path | str) -> np.ndarray:
    return TextEncoder(EncoderSettings(model=str(model))).encode_questions(["who described topic 3"])


def test_a_bound_met_while_training_checkpoints_writes_the_encoder_and_resumes(
    adapt_store: Path, tiny_st_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "adapted"
    # safe points: 2 scoring batches of 8, the start of training, then after each step
    stopped = adapt_question_encoder(
        _plan(adapt_store, tiny_st_dir), _scorers(adapt_store), out, CallsDeadline(4), False
    )
    assert stopped.scored == 12 and stopped.stopped_by_time and not stopped.complete
    assert stopped.training == {"steps": 1, "total_steps": 3, "complete": False}
    assert (out / "checkpoints" / "step-00000001" / "state.json").is_file()
    pair = read_pair_file(Path(stopped.question_encoder))
    assert pair is not None and pair["passage_model"] == str(tiny_st_dir)
    report = json.loads((out / "adaptation.json").read_text())
    assert report["stopped_by_time_bound"] and report["training"]["steps"] == 1 and report["runs"] == 1
    finished = adapt_question_encoder(_plan(adapt_store, tiny_st_dir), _scorers(adapt_store), out, None, False)
    assert finished.complete and finished.training == {"steps": 3, "total_steps": 3, "complete": True}
    assert json.loads((out / "adaptation.json").read_text())["runs"] == 2
    assert not np.allclose(_question_vector(tiny_st_dir), _question_vector(finished.question_encoder))


def test_a_bound_met_while_scoring_writes_the_starting_encoder_and_the_rest_is_scored_later(
    adapt_store: Path, tiny_st_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "adapted"
    stopped = adapt_question_encoder(
        _plan(adapt_store, tiny_st_dir), _scorers(adapt_store), out, CallsDeadline(2), False
    )
    assert (stopped.scored, stopped.training, stopped.complete) == (8, {}, False)
    np.testing.assert_allclose(_question_vector(stopped.question_encoder), _question_vector(tiny_st_dir), atol=1e-6)
    assert "not complete" in (out / "adaptation.md").read_text()
    finished = adapt_question_encoder(_plan(adapt_store, tiny_st_dir), _scorers(adapt_store), out, None, False)
    assert finished.scored == 12 and finished.complete
    lines = (out / "teacher.jsonl").read_text().splitlines()
    assert len(lines) == len({json.loads(line)["id"] for line in lines}) == 12


def test_the_adapted_encoder_passes_the_stores_pairing_check(
    adapt_store: Path, tiny_st_dir: Path, tmp_path: Path
) -> None:
    done = adapt_question_encoder(_plan(adapt_store, tiny_st_dir), _scorers(adapt_store), tmp_path / "a", None, False)
    retriever = DenseRetriever(document_store=EmbeddedDocumentStore(path=str(adapt_store)), model=done.question_encoder)
    retriever.warm_up()
    assert retriever.check_store_pairing()
    assert len(retriever.run(query="who described topic 3", top_k=3)["documents"]) == 3


def test_a_store_of_another_passage_encoder_is_refused(
    adapt_store: Path, tiny_encoder_dir: Path, tmp_path: Path
) -> None:
    plan = _plan(adapt_store, tiny_encoder_dir)
    with pytest.raises(
        ValueError, match=r"embedded by another passage encoder .* give the passage encoder that indexed it"
    ):
        adapt_question_encoder(plan, _scorers(adapt_store), tmp_path / "a", None, False)


def test_an_empty_store_and_a_store_without_vectors_are_refused(tiny_st_dir: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    with pytest.raises(ValueError, match=r"holds no passages: index your documents first"):
        adapt_question_encoder(_plan(empty, tiny_st_dir), _scorers(empty), tmp_path / "a", None, False)
    bare = tmp_path / "bare"
    EmbeddedDocumentStore(path=str(bare)).write_documents([Document(id="a#0", content="A passage with no vector.")])
    with pytest.raises(ValueError, match=r"holds no passage vectors"):
        adapt_question_encoder(_plan(bare, tiny_st_dir), _scorers(bare), tmp_path / "b", None, False)


def test_a_store_whose_passages_give_no_query_is_refused(tiny_st_dir: Path, tmp_path: Path) -> None:
    from dpr_components.cli.main import main
    from tests.helpers.commands import index_args
    from tests.helpers.corpora import write_jsonl

    store = tmp_path / "short"
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "title": "A", "text": "Too short to ask."}])
    assert main(index_args(corpus, store, tiny_st_dir)) == 0
    with pytest.raises(ValueError, match=r"no passage gives a pseudo-query \(each needs 20 words and two sentences\)"):
        adapt_question_encoder(_plan(store, tiny_st_dir), _scorers(store), tmp_path / "a", None, False)
