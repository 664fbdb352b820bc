"""Hard-negative mining (BM25, dense, both) on a small corpus: answer-free, not the gold passage, resumable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpr_components.document_stores.bm25_index import BM25Index
from dpr_components.dpr_data.examples import Ctx, TrainingExample
from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.encoder_training.negatives import (
    NegativeMiner,
    NegativeMiningSettings,
    best_positive_block,
    bm25_for,
    load_corpus_passages,
    mine_to_file,
)
from tests.helpers.paths import REPO

CORPUS = [
    {"id": "d1", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare."},
    {
        "id": "d2",
        "title": "Macbeth",
        "text": "Macbeth is a tragedy by Shakespeare; its author was William Shakespeare.",
    },
    {"id": "d3", "title": "Othello", "text": "Othello is a tragedy set in Venice, written around 1603."},
    {"id": "d4", "title": "King Lear", "text": "King Lear is a tragedy about an old king and his daughters."},
    {"id": "d5", "title": "Everest", "text": "Mount Everest is the highest mountain above sea level."},
]
EXAMPLES = [
    TrainingExample(
        "who wrote the tragedy hamlet",
        ["William Shakespeare"],
        [Ctx("Hamlet", "Hamlet is a tragedy written by William Shakespeare.")],
        id="q1",
    ),
    TrainingExample(
        "what is the highest mountain",
        ["Everest"],
        [Ctx("Everest", "Mount Everest is the highest mountain above sea level.")],
        id="q2",
    ),
    TrainingExample(
        "which tragedy is set in venice",
        ["Othello"],
        [Ctx("Othello", "Othello is a tragedy set in Venice, written around 1603.")],
        id="q3",
    ),
]


@pytest.fixture()
def miner(tmp_path: Path) -> NegativeMiner:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in CORPUS), encoding="utf-8")
    passages = load_corpus_passages(corpus)
    index = bm25_for(passages, tmp_path / "cache", show_progress=False)
    return NegativeMiner(passages, index, NegativeMiningSettings(num_negatives=2, depth=5))


def test_negatives_contain_no_answer_and_are_not_the_positive(miner: NegativeMiner) -> None:
    record = miner.mine(EXAMPLES[0])
    texts = [n["text"] for n in record["hard_negative_ctxs"]]
    assert len(texts) == 2
    assert all("William Shakespeare" not in t for t in texts)  # d1 is gold, d2 holds the answer
    assert texts[0].startswith("Othello") or texts[0].startswith("King Lear")
    assert {"title", "text", "score", "passage_id"} <= set(record["hard_negative_ctxs"][0])
    assert record["positive_ctxs"] == [
        {"title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare."}
    ]


def test_long_positive_becomes_its_answer_block() -> None:
    text = " ".join(f"w{i}" for i in range(250)) + " the answer is Paris"
    block, found = best_positive_block(Ctx("T", text), ["Paris"], 100)
    assert found and block.text.endswith("Paris") and len(block.text.split()) <= 100
    block, found = best_positive_block(Ctx("T", text), ["London"], 100)
    assert not found and block.text.startswith("w0 ")


def test_mining_resumes_and_renames_atomically(miner: NegativeMiner, tmp_path: Path) -> None:
    out = tmp_path / "mined.jsonl"
    partial = tmp_path / "mined.jsonl.partial"
    first = mine_to_file(EXAMPLES[:1], miner, tmp_path / "first.jsonl", show_progress=False)
    assert first.written == 1
    # A previous run mined q1 and was killed halfway through writing q2's line.
    done_line = (tmp_path / "first.jsonl").read_text(encoding="utf-8")
    partial.write_text(done_line + '{"id": "q2", "quest', encoding="utf-8")
    (tmp_path / "mined.jsonl.partial.settings.json").write_text(
        json.dumps({"mining": {"num_negatives": 2, "depth": 5, "split_positives": True, "words_per_passage": 100}}),
        encoding="utf-8",
    )
    report = mine_to_file(EXAMPLES, miner, out, show_progress=False)
    assert report.resumed == 1 and report.written == 2
    assert report.short_of_negatives == 1  # nothing but the gold passage shares a term with q2
    assert out.exists() and not partial.exists()
    ids = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert ids == ["q1", "q2", "q3"]
    loaded = load_training_examples(out)
    assert [len(e.hard_negatives) for e in loaded.examples] == [2, 0, 2]
    meta = json.loads((tmp_path / "mined.jsonl.meta.json").read_text(encoding="utf-8"))
    assert meta["records"] == 3 and meta["report"]["resumed"] == 1


def test_resume_with_other_settings_is_refused(miner: NegativeMiner, tmp_path: Path) -> None:
    out = tmp_path / "mined.jsonl"
    (tmp_path / "mined.jsonl.partial.settings.json").write_text(json.dumps({"mining": {"num_negatives": 9}}))
    with pytest.raises(ValueError, match="other settings"):
        mine_to_file(EXAMPLES, miner, out, show_progress=False)


def test_index_size_must_match() -> None:
    index = BM25Index()
    index.build(["one text"])
    with pytest.raises(ValueError, match="holds 1 passages"):
        NegativeMiner([], index)


def test_mine_command(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in CORPUS), encoding="utf-8")
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(e.to_dpr_record()) + "\n" for e in EXAMPLES), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    command = [
        sys.executable,
        "-m",
        "training.retriever.mine_negatives",
        "--data",
        str(data),
        "--out",
        str(out),
        "--corpus",
        str(corpus),
        "--num-negatives",
        "2",
        "--depth",
        "5",
    ]
    env = {**os.environ, "DPR_CACHE_DIR": str(tmp_path / "cache")}
    root = REPO
    done = subprocess.run(command, capture_output=True, text=True, cwd=root, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert len(out.read_text(encoding="utf-8").splitlines()) == 3
    assert any((tmp_path / "cache" / "training").iterdir())  # the BM25 index is cached
    again = subprocess.run(command, capture_output=True, text=True, cwd=root, env=env, timeout=60, check=False)
    assert again.returncode == 0 and "already mined" in again.stderr


class _FixedRanking:
    """A search index that returns the same ranking for every question."""

    def __init__(self, n: int, order: list[int]) -> None:
        self.n, self.order = n, order

    def __len__(self) -> int:
        return self.n

    def search(self, query: str, top_k: int):
        import numpy as np

        order = self.order[:top_k]
        return np.array(order, dtype=np.int64), -np.arange(len(order), dtype=np.float32)


def test_several_retrievers_are_interleaved_rank_by_rank(miner: NegativeMiner) -> None:
    passages = miner.passages  # d1..d5; q2's answer "Everest" is only in d5
    both = NegativeMiner(
        passages,
        [_FixedRanking(5, [2, 3, 0]), _FixedRanking(5, [1, 3, 4])],
        NegativeMiningSettings(num_negatives=4, depth=4),
    )
    record = both.mine(EXAMPLES[1])
    assert [n["passage_id"] for n in record["hard_negative_ctxs"]] == [
        passages[2].id,
        passages[1].id,
        passages[3].id,
        passages[0].id,
    ]
    with pytest.raises(ValueError, match="holds 4 passages"):
        NegativeMiner(passages, [_FixedRanking(4, [0])])


def test_dense_index_ranks_by_inner_product_and_skips_the_top(tiny_bert_dir: Path, tmp_path: Path) -> None:
    import numpy as np

    from dpr_components.encoder_training.dense_mining import DenseSearchIndex

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in CORPUS), encoding="utf-8")
    passages = load_corpus_passages(corpus)
    index = DenseSearchIndex.for_passages(str(tiny_bert_dir), passages, tmp_path / "cache", show_progress=False)
    positions, scores = index.search("who wrote hamlet", 5)
    question = index.question_encoder.encode_questions(["who wrote hamlet"])[0]
    expected = index.passage_vectors @ question
    assert sorted(positions.tolist()) == list(range(5))
    np.testing.assert_allclose(scores, expected[positions], rtol=1e-5)
    assert list(scores) == sorted(scores, reverse=True)
    skipped = DenseSearchIndex(index.question_encoder, index.passage_vectors, skip_top=2)
    assert skipped.search("who wrote hamlet", 2)[0].tolist() == positions[2:4].tolist()
    mined = NegativeMiner(
        passages,
        [bm25_for(passages, None, show_progress=False), index],
        NegativeMiningSettings(num_negatives=3, depth=5),
    ).mine(EXAMPLES[0])
    assert all("William Shakespeare" not in n["text"] for n in mined["hard_negative_ctxs"])


def test_dense_mining_on_openvino_reuses_the_vectors_an_openvino_encoder_cached(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    pytest.importorskip("openvino")
    import numpy as np

    from dpr_components.encoder_training.dense_mining import DenseSearchIndex
    from dpr_components.encoders.batch_encoding import cache_for, encode_passages_cached
    from dpr_components.encoders.embedding_cache import passage_key
    from dpr_components.encoders.encoder_settings import EncoderSettings
    from dpr_components.encoders.text_encoder import TextEncoder

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in CORPUS), encoding="utf-8")
    passages = load_corpus_passages(corpus)
    indexer = TextEncoder(EncoderSettings(model=str(tiny_bert_dir), backend="openvino"))
    titles = [p.title or None for p in passages]
    # What an index pipeline leaves in the cache, with one vector changed so a reuse is visible.
    cached = encode_passages_cached(indexer, [p.text for p in passages], titles, cache_for(indexer, tmp_path / "c"))
    cache = cache_for(indexer, tmp_path / "c")
    marker = np.zeros_like(cached[0])
    marker[0] = 1.0
    cache.put([passage_key(titles[0], passages[0].text)], marker[None, :])
    index = DenseSearchIndex.for_passages(
        str(tiny_bert_dir), passages, tmp_path / "c", show_progress=False, backend="openvino"
    )
    np.testing.assert_array_equal(index.passage_vectors[0], marker)
    np.testing.assert_allclose(index.passage_vectors[1:], cached[1:], atol=1e-6)
    assert index.question_encoder.backend == "openvino"
