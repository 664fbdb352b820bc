"""Reader training data: questions with positive and negative passages mined from retrieval.

As in DPR (Karpukhin et al. 2020, section 6), each training question gets one positive passage
and m−1 negatives. SQuAD questions (``gold`` kind) take their own paragraph as the positive;
Natural Questions (``retrieved`` kind) take retrieved passages that contain an answer (and the
gold paragraph when it does). Negatives are retrieved passages without any answer. With
gold-document positives, the passages of the pool documents holding a question's gold paragraph
are positives too (first), answer or not, and never negatives. Mined questions are written once
to a JSONL file of passage ids, so training needs only the store."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from tqdm.auto import tqdm

from dpr_components.dpr_data.loading import read_json_document
from dpr_components.dpr_data.records import (
    MAX_TRAINING_PASSAGE_CHARS,
    MAX_TRAINING_QUESTION_CHARS,
    MAX_TRAINING_TITLE_CHARS,
    check_length,
)
from dpr_components.evaluation.answer_matching import has_answer
from dpr_components.utils.atomic_files import atomic_path
from dpr_components.utils.line_files import numbered_lines

Kind = Literal["gold", "retrieved"]
PositivesBy = Literal["answer", "gold-document"]


@dataclass(frozen=True)
class Passage:
    title: str | None
    text: str


@dataclass
class SourceQuestion:
    """A question as read from a data file, with its gold paragraph when the file has one and the
    pool documents holding that paragraph once looked up (:mod:`dpr_components.dpr_data.gold_documents`)."""

    id: str
    question: str
    answers: list[str]
    gold: Passage | None
    gold_ids: list[str] = field(default_factory=list)


@dataclass
class MinedQuestion:
    """A question with the passages mined for it (ids into the document store)."""

    id: str
    question: str
    answers: list[str]
    kind: Kind
    gold: Passage | None
    positive_ids: list[str] = field(default_factory=list)
    negative_ids: list[str] = field(default_factory=list)
    top_ids: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> MinedQuestion:
        data = json.loads(line)
        gold = data.pop("gold")
        return cls(**data, gold=Passage(**gold) if gold else None)


def read_squad_json(path: str | Path, limit: int | None = None) -> list[SourceQuestion]:
    """Questions of a SQuAD v1.1 JSON file, each with its paragraph as the gold passage (sizes bounded
    as for DPR training data: :mod:`dpr_components.dpr_data.loading`)."""
    document = read_json_document(Path(path))
    try:
        data = document["data"]  # type: ignore[index]
        out: list[SourceQuestion] = []
        for a, article in enumerate(data):
            title = check_length(article.get("title", ""), f"{path}, data[{a}]", "title", MAX_TRAINING_TITLE_CHARS)
            for p, paragraph in enumerate(article["paragraphs"]):
                where = f"{path}, data[{a}].paragraphs[{p}]"
                gold = Passage(
                    title.replace("_", " "),
                    check_length(paragraph["context"], where, "context", MAX_TRAINING_PASSAGE_CHARS),
                )
                for q, qa in enumerate(paragraph["qas"]):
                    question = check_length(
                        qa["question"], f"{where}.qas[{q}]", "question", MAX_TRAINING_QUESTION_CHARS
                    )
                    answers = list(dict.fromkeys(a["text"] for a in qa["answers"] if a["text"].strip()))
                    if answers:
                        out.append(SourceQuestion(qa["id"], question, answers, gold))
                    if limit is not None and len(out) >= limit:
                        return out
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: not a SQuAD JSON file ({type(error).__name__}: {error})") from error
    return out


def read_jsonl(path: str | Path, limit: int | None = None) -> list[SourceQuestion]:
    """Questions of a ``{"id","question","answers","positive_ctxs"}`` JSONL file (gold = first positive)."""
    out: list[SourceQuestion] = []
    for number, line in numbered_lines(path, "question file"):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            record = json.loads(line)
            contexts = record.get("positive_ctxs") or []
            gold = None
            if contexts:
                text = check_length(contexts[0]["text"], where, "positive_ctxs[0].text", MAX_TRAINING_PASSAGE_CHARS)
                gold = Passage(contexts[0].get("title"), text)
            question = check_length(record["question"], where, "question", MAX_TRAINING_QUESTION_CHARS)
            out.append(SourceQuestion(str(record["id"]), question, list(record["answers"]), gold))
        except (json.JSONDecodeError, KeyError, TypeError, IndexError, AttributeError) as error:
            raise ValueError(f"{where}: bad question record ({type(error).__name__}: {error})") from error
        if limit is not None and len(out) >= limit:
            break
    return out


def read_questions(path: str | Path, limit: int | None = None) -> list[SourceQuestion]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"question file {path} does not exist")
    return read_squad_json(path, limit) if path.suffix == ".json" else read_jsonl(path, limit)


def interleave(rankings: Sequence[Sequence[str]]) -> list[str]:
    """Round-robin merge of ranked id lists without duplicates."""
    seen: dict[str, None] = {}
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking):
                seen.setdefault(ranking[rank], None)
    return list(seen)


@dataclass(frozen=True)
class ReaderMiningSettings:
    """Reader training passages: how many retrieved passages to look at and keep per question
    (retriever training's hard negatives are :class:`~dpr_components.encoder_training.negatives.NegativeMiningSettings`)."""

    depth: int = 50  # retrieved passages per retriever
    negatives: int = 30  # negatives kept (training samples m−1 of them)
    positives: int = 3  # positives kept for ``retrieved`` questions
    top: int = 20  # retrieved ids kept in rank order (reading evaluation)
    positives_by: PositivesBy = "answer"  # "gold-document": passages of the questions' gold_ids documents too


def mine(
    questions: Sequence[SourceQuestion],
    kind: Kind,
    retrievers: Sequence[Callable[[int], list[Any]]],
    settings: ReaderMiningSettings = ReaderMiningSettings(),
    progress: bool = True,
    keep_all: bool = False,
) -> list[MinedQuestion]:
    """Split each question's retrieved passages into positives and negatives by answer matching.

    ``retrievers`` are functions of the question index returning ranked Haystack documents.
    ``retrieved`` questions without any positive are dropped unless ``keep_all`` (dev sets).
    With ``settings.positives_by == "gold-document"``, passages whose ``meta["document_id"]`` is
    one of a question's ``gold_ids`` are positives (before the answer-matched ones, within
    ``settings.positives``) and never negatives, and a found gold paragraph is kept without an answer."""
    if settings.positives_by not in ("answer", "gold-document"):
        raise ValueError(f"positives_by must be 'answer' or 'gold-document', got {settings.positives_by!r}")
    out: list[MinedQuestion] = []
    for index, q in enumerate(tqdm(questions, desc=f"Mining passages ({kind})", unit="q", disable=not progress)):
        documents = {}
        rankings = []
        for retrieve in retrievers:
            ranked = retrieve(index)[: settings.depth]
            rankings.append([d.id for d in ranked])
            documents.update({d.id: d for d in ranked})
        merged = interleave(rankings)
        mined = MinedQuestion(q.id, q.question, q.answers, kind, q.gold, top_ids=merged[: settings.top])
        gold_documents = set(q.gold_ids) if settings.positives_by == "gold-document" else set()
        in_gold: list[str] = []
        answered: list[str] = []
        for doc_id in merged:
            if documents[doc_id].meta.get("document_id") in gold_documents:
                in_gold.append(doc_id)
            elif has_answer(q.answers, documents[doc_id].content or ""):
                answered.append(doc_id)
            elif len(mined.negative_ids) < settings.negatives:
                mined.negative_ids.append(doc_id)
        if kind == "retrieved":
            mined.positive_ids = (in_gold + answered)[: settings.positives]
        if kind == "retrieved" and not gold_documents and mined.gold and not has_answer(q.answers, mined.gold.text):
            mined.gold = None  # a gold paragraph found in the pool stays a positive, answer or not
        if kind == "gold" and mined.gold is None:
            raise ValueError(f"question {q.id} has no gold passage; use kind 'retrieved'")
        if kind == "retrieved" and not mined.positive_ids and mined.gold is None and not keep_all:
            continue
        out.append(mined)
    return out


def write_mined(path: str | Path, mined: Iterable[MinedQuestion]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for m in mined:
            handle.write(m.to_json() + "\n")


def read_mined(path: str | Path) -> list[MinedQuestion]:
    """Mined questions as :func:`write_mined` wrote them."""
    return [MinedQuestion.from_json(line) for _, line in numbered_lines(path, "mined questions file") if line.strip()]


class PassageLookup:
    """Passage title and text by store id, read from the document store once and kept."""

    def __init__(self, store: Any, title_field: str = "title") -> None:
        self.store = store
        self.title_field = title_field
        self._cache: dict[str, Passage] = {}

    def preload(self, ids: Iterable[str], batch: int = 2000) -> None:
        wanted = [i for i in dict.fromkeys(ids) if i not in self._cache]
        for start in range(0, len(wanted), batch):
            for doc in self.store.get_documents_by_id(wanted[start : start + batch]):
                self._cache[doc.id] = Passage(doc.meta.get(self.title_field), doc.content or "")
        missing = [i for i in wanted if i not in self._cache]
        if missing:
            raise KeyError(f"{len(missing)} mined passages are not in the document store (e.g. {missing[:3]})")

    def __getitem__(self, doc_id: str) -> Passage:
        if doc_id not in self._cache:
            self.preload([doc_id])
        return self._cache[doc_id]


def positives_of(question: MinedQuestion, lookup: PassageLookup) -> list[Passage]:
    gold = [question.gold] if question.gold is not None else []
    if question.kind == "gold":
        return gold
    return gold + [lookup[i] for i in question.positive_ids]


def example_rng(seed: int, epoch: int, index: int) -> np.random.Generator:
    """Sampling for one example depends only on (seed, epoch, example), so a resumed run repeats it."""
    return np.random.default_rng([seed, epoch, index])
