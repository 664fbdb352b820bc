"""The ablations' evaluation: every dev question against one fixed, sampled candidate set."""

from __future__ import annotations

import json
from pathlib import Path

from training.retriever.sampled_pool_eval import candidate_set, main

CORPUS = [
    {"id": "hamlet", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare."},
    {"id": "everest", "title": "Mount Everest", "text": "Mount Everest is 8,849 metres above sea level."},
    {"id": "curie", "title": "Marie Curie", "text": "Marie Curie won the Nobel Prize in 1903 and 1911."},
    {"id": "bees", "title": "Honey bee", "text": "Honey bees live in colonies with a single queen."},
    {"id": "jupiter", "title": "Jupiter", "text": "Jupiter is the largest planet of the Solar System."},
]


def _corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in CORPUS) + "\n", encoding="utf-8")
    return path


def _dev_file(tmp_path: Path) -> Path:
    def ctx(doc: dict) -> dict:
        return {"title": doc["title"], "text": doc["text"]}

    hamlet, everest, curie, bees, _ = CORPUS
    records = [
        {
            "question": "who wrote hamlet",
            "answers": ["William Shakespeare"],
            "positive_ctxs": [ctx(hamlet)],
            "hard_negative_ctxs": [ctx(bees)],
        },
        {
            "question": "how high is everest",
            "answers": ["8,849 metres"],
            "positive_ctxs": [ctx(everest)],
            "hard_negative_ctxs": [ctx(curie), ctx(bees)],
        },
    ]
    path = tmp_path / "dev.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_candidates_hold_gold_negatives_and_a_sample_once_each(tmp_path: Path) -> None:
    small_corpus_file = _corpus_file(tmp_path)
    data = candidate_set(str(_dev_file(tmp_path)), pool_size=2, hard_negatives=5, corpus_file=str(small_corpus_file))
    texts = [p.text for p in data.passages]
    assert data.questions == ["who wrote hamlet", "how high is everest"]
    assert len(texts) == len(set(texts))  # a sampled passage equal to a gold one is not added twice
    assert texts[data.positive_index[0]] == CORPUS[0]["text"]
    assert {CORPUS[2]["text"], CORPUS[3]["text"]} <= set(texts)
    again = candidate_set(str(_dev_file(tmp_path)), pool_size=2, hard_negatives=5, corpus_file=str(small_corpus_file))
    assert [p.text for p in again.passages] == texts  # seeded: every run scores the same candidates


def test_command_scores_a_trained_pair(tmp_path: Path, tiny_dpr_dirs: tuple[Path, Path]) -> None:
    system = tmp_path / "best"
    system.mkdir()
    (system / "question_encoder").symlink_to(tiny_dpr_dirs[0])
    (system / "passage_encoder").symlink_to(tiny_dpr_dirs[1])
    out = tmp_path / "eval.json"
    assert (
        main(
            [
                "--system",
                str(system),
                "--dev",
                str(_dev_file(tmp_path)),
                "--corpus",
                str(_corpus_file(tmp_path)),
                "--pool-size",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["questions"] == 2 and result["candidates"] >= 4
    assert 1.0 <= result["metrics"]["avg_rank"] <= result["candidates"]
    assert set(result["metrics"]) >= {"mrr", "top1", "top5", "top20", "top100"}
