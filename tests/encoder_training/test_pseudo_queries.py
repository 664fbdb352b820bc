"""Pseudo-queries from a store's passages: the same queries whatever the passages' order, one per passage up
to ``max_passages``, short and sentence-less passages skipped, each method's query taken from its passage."""

from __future__ import annotations

import random

import pytest

from dpr_components.encoder_training.pseudo_queries import (
    PseudoQuerySettings,
    StorePassage,
    crop_query,
    make_pseudo_queries,
    sentences,
)

TEXT = (
    "The river rises in the northern hills and runs south. It passes three old mill towns on its way. "
    "Its water was once used to turn the wheels of the mills."
)


def _passages(count: int) -> list[StorePassage]:
    return [StorePassage(f"doc{n}#0", f"{TEXT} Passage {n} ends here.", f"doc{n}") for n in range(count)]


def test_sentences_split_at_end_punctuation_before_a_capital() -> None:
    assert sentences('One two. Three four! 5 six? seven. "Eight" nine') == [
        "One two.",
        "Three four!",
        "5 six? seven.",
        '"Eight" nine',
    ]


@pytest.mark.parametrize("method", ["ict", "crop"])
def test_the_same_queries_whatever_the_order_of_the_passages(method: str) -> None:
    settings = PseudoQuerySettings(method=method, max_passages=5, seed=3)  # type: ignore[arg-type]
    passages = _passages(20)
    shuffled = list(passages)
    random.Random(1).shuffle(shuffled)
    first = make_pseudo_queries(passages, settings).questions
    assert [(q.id, q.question) for q in first] == [
        (q.id, q.question) for q in make_pseudo_queries(shuffled, settings).questions
    ]
    other_seed = make_pseudo_queries(passages, PseudoQuerySettings(method=method, max_passages=5, seed=4)).questions  # type: ignore[arg-type]
    assert [q.id for q in other_seed] != [q.id for q in first]


def test_ict_asks_one_sentence_of_its_passage_and_points_at_its_document() -> None:
    questions = make_pseudo_queries(_passages(6), PseudoQuerySettings(method="ict")).questions
    assert len(questions) == 6
    for question in questions:
        passage_id = question.id.removeprefix("ict:")
        text = next(p.text for p in _passages(6) if p.id == passage_id)
        assert question.question in sentences(text)
        assert question.gold_ids == [passage_id.split("#")[0]] and question.answers == [] and question.source == "ict"


def test_crop_takes_a_span_of_words_within_its_bounds() -> None:
    settings = PseudoQuerySettings(method="crop", min_query_words=5, max_query_words=9)
    for n in range(30):
        query = crop_query(TEXT, random.Random(n), settings)
        assert 5 <= len(query.split()) <= 9 and query in " ".join(TEXT.split())


def test_max_passages_bounds_the_queries_and_skips_are_counted() -> None:
    passages = [
        *_passages(4),
        StorePassage("short#0", "Too short. To ask.", "short"),
        StorePassage("one#0", " ".join(["word"] * 30), "one"),  # one sentence: nothing to keep beside the query
    ]
    everything = make_pseudo_queries(passages, PseudoQuerySettings(method="ict"))
    assert everything.counts() == {
        "pseudo_queries": 4,
        "passages_read": 6,
        "skipped_short": 1,
        "skipped_no_sentence": 1,
    }
    assert (
        len(make_pseudo_queries(passages, PseudoQuerySettings(method="crop")).questions) == 5
    )  # crop needs no sentence
    bounded = make_pseudo_queries(passages, PseudoQuerySettings(method="ict", max_passages=2))
    assert len(bounded.questions) == 2 and bounded.passages_read <= 4


def test_the_queries_are_clipped_to_max_query_words() -> None:
    long_sentence = " ".join(f"w{n}" for n in range(50))
    passage = StorePassage("long#0", f"{long_sentence}. Short second sentence here.", "long")
    settings = PseudoQuerySettings(method="ict", max_query_words=6, min_query_words=4, seed=0)
    questions = make_pseudo_queries([passage], settings).questions
    assert all(len(q.question.split()) <= 6 for q in questions) and questions


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"method": "generate"}, "query_method must be one of ict, crop"),
        ({"max_passages": 0}, "max_passages must be a positive integer"),
        ({"max_passages": True}, "max_passages must be a positive integer"),
        ({"min_query_words": 9, "max_query_words": 4}, "must not exceed max_query_words"),
        ({"seed": 1.5}, "seed must be an integer"),
    ],
)
def test_bad_settings_are_refused_in_one_line(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PseudoQuerySettings(**changes)
