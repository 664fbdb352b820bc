"""A small reader training run: six questions, a dictionary of passages, a 6-step configuration."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from haystack import Document

from dpr_components.reader_training.data import MinedQuestion, Passage, PassageLookup
from dpr_components.reader_training.train import ReaderTrainingSettings, train


class DictStore:
    """Just enough of a document store for ``PassageLookup``."""

    def __init__(self, documents: dict[str, Document]) -> None:
        self.documents = documents

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        return [self.documents[i] for i in ids if i in self.documents]


PASSAGES = {
    f"n{i}": Document(id=f"n{i}", content=f"Filler passage {i} about rivers and old towns.", meta={"title": f"N{i}"})
    for i in range(8)
}
PASSAGES["p0"] = Document(id="p0", content="The Eiffel Tower is in Paris, in France.", meta={"title": "Eiffel"})

QUESTIONS = [
    ("where is the eiffel tower", ["Paris"], "The Eiffel Tower stands in Paris; Paris is the capital of France."),
    ("who wrote hamlet", ["William Shakespeare"], "Hamlet is a tragedy written by William Shakespeare around 1600."),
    ("what is the highest mountain", ["Mount Everest"], "Mount Everest is the highest mountain on Earth."),
    ("when did curie win the prize", ["1903"], "Marie Curie won the Nobel Prize in Physics in 1903."),
    ("what do bees make", ["honey"], "Honey bees live in colonies and make honey from nectar."),
    ("which planet is largest", ["Jupiter"], "Jupiter is the largest planet of the Solar System."),
]


def mined_questions() -> list[MinedQuestion]:
    """QUESTIONS with their gold passage, the eight filler passages as negatives."""
    return [
        MinedQuestion(
            f"q{i}",
            q,
            answers,
            "gold",
            Passage("T", text),
            negative_ids=[f"n{j}" for j in range(8)],
            top_ids=["p0", "n0", "n1"],
        )
        for i, (q, answers, text) in enumerate(QUESTIONS)
    ]


def reader_config(output: Path, encoder: Path, **changes: Any) -> ReaderTrainingSettings:
    """6 steps (batch 2, 2 epochs), evaluation and checkpoint every 2 steps."""
    settings = dict(
        output_dir=str(output),
        init_model=str(encoder),
        passages_per_question=3,
        batch_size=2,
        epochs=2,
        learning_rate=1e-3,
        max_length=64,
        stride=8,
        max_question_tokens=16,
        max_title_tokens=8,
        eval_every=2,
        checkpoint_every=2,
        log_every=1,
        dev_passages=3,
        progress=False,
    )
    return ReaderTrainingSettings(**{**settings, **changes})


def train_reader(output: Path, encoder: Path, after_step: Callable[[int], None] | None = None, **changes: Any) -> Any:
    """Trains (or resumes) the reader_config run on mined_questions, the first three as dev set."""
    lookup = PassageLookup(DictStore(PASSAGES))
    return train(
        reader_config(output, encoder, **changes),
        mined_questions(),
        mined_questions()[:3],
        lookup,
        after_step=after_step,
    )


def reader_state(output: Path) -> dict:
    """The run's checkpoint state (plain data: loading never runs code)."""
    return torch.load(output / "checkpoint" / "state.pt", weights_only=True)


def assert_same_state(a: dict, b: dict) -> None:
    """Two reader checkpoint states hold the same position, weights, optimizer moments and schedule."""
    assert a["position"] == b["position"]
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
    for pa, pb in zip(a["optimizer"]["state"].values(), b["optimizer"]["state"].values(), strict=True):
        assert torch.equal(pa["exp_avg"], pb["exp_avg"])
    assert a["scheduler"] == b["scheduler"]
