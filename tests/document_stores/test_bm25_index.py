"""BM25Index and its Lucene-like analyzer, on small hand-made corpora."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpr_components.document_stores.analyzer import (
    LUCENE_STOP_WORDS,
    EnglishAnalyzer,
    tokenize,
)
from dpr_components.document_stores.bm25_index import BM25Index

# --- analyzer ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def analyzer() -> EnglishAnalyzer:
    return EnglishAnalyzer()


def test_lucene_stop_set_has_33_words() -> None:
    assert len(LUCENE_STOP_WORDS) == 33
    assert {"the", "a", "with", "their"} <= LUCENE_STOP_WORDS
    assert "he" not in LUCENE_STOP_WORDS


def test_stop_words_are_removed(analyzer: EnglishAnalyzer) -> None:
    assert analyzer.analyze("The cat is on the mat") == ["cat", "mat"]
    assert analyzer.analyze("to be or not to be") == []


def test_porter_stemming_as_lucene(analyzer: EnglishAnalyzer) -> None:
    words = "running ponies caresses relational happily technologies possibly trekking"
    assert analyzer.analyze(words) == ["run", "poni", "caress", "relat", "happili", "technolog", "possibl", "trek"]


def test_words_of_two_letters_are_not_stemmed(analyzer: EnglishAnalyzer) -> None:
    assert analyzer.analyze("us vs s") == ["us", "vs", "s"]


def test_possessives_are_removed(analyzer: EnglishAnalyzer) -> None:
    assert analyzer.analyze("John's dog") == ["john", "dog"]
    assert analyzer.analyze("O\u2019Brien\u2019s house") == ["o\u2019brien", "hous"]
    assert analyzer.analyze("don't") == ["don't"]


def test_numbers_and_single_characters_are_kept(analyzer: EnglishAnalyzer) -> None:
    assert analyzer.analyze("pi is 3.14, not 1,000 or 3rd x") == ["pi", "3.14", "1,000", "3rd", "x"]
    assert analyzer.analyze("the 1990s") == ["1990"]
    assert analyzer.analyze("e-mail U.S. a.1") == ["e", "mail", "u.", "1"]


def test_unicode(analyzer: EnglishAnalyzer) -> None:
    assert analyzer.analyze("Café naïve") == ["café", "naïv"]
    assert analyzer.analyze("東京タワー") == ["東", "京", "タワー"]
    assert analyzer.analyze("İstanbul") == ["istanbul"]
    assert analyzer.analyze("ΟΔΥΣΣΕΥΣ") == ["οδυσσευσ"]
    assert analyzer.analyze("soft\u00adhyphen zero\u200bwidth") == ["soft\u00adhyphen", "zero", "width"]
    assert analyzer.analyze("© ♥ ✓") == ["©", "♥"]


def test_empty_and_punctuation_only(analyzer: EnglishAnalyzer) -> None:
    assert analyzer.analyze("") == []
    assert analyzer.analyze(" ... -- !? _ ") == []
    assert tokenize("") == []


def test_long_tokens_are_cut_like_standard_tokenizer() -> None:
    assert [len(t) for t in tokenize("x" * 600)] == [255, 255, 90]


def test_full_stem_cache_starts_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpr_components.document_stores import analyzer as analyzer_module

    monkeypatch.setattr(analyzer_module, "_CACHE_LIMIT", 3)
    small = EnglishAnalyzer()
    assert small.analyze("running dogs") == ["run", "dog"]
    assert small.analyze("jumping cats and birds") == ["jump", "cat", "bird"]
    assert small.analyze("running dogs") == ["run", "dog"]


def test_analyzer_options() -> None:
    assert EnglishAnalyzer(stemmer=None).analyze("Running dogs") == ["running", "dogs"]
    assert EnglishAnalyzer(stopwords=None).analyze("the cat") == ["the", "cat"]
    assert EnglishAnalyzer(stopwords=["Cat"]).analyze("the cat") == ["the"]
    assert EnglishAnalyzer(stemmer="english").analyze("generously") == ["generous"]
    with pytest.raises(ValueError, match="unknown stemmer"):
        EnglishAnalyzer(stemmer="klingon")
    with pytest.raises(ValueError, match="unknown stop word set"):
        EnglishAnalyzer(stopwords="klingon")


# --- index ------------------------------------------------------------------------------------

CORPUS = [
    "The cat sat on the mat",  # cat sat mat
    "Dog cat cat bird fish",  # dog cat cat bird fish
    "Bird owl",  # bird owl
]


def built(texts: list[str] = CORPUS, **kwargs: object) -> BM25Index:
    index = BM25Index(**kwargs)  # type: ignore[arg-type]
    index.build(texts)
    return index


def test_hand_computed_lucene_score() -> None:
    index = built()
    assert [index.analyzer.analyze(t) for t in CORPUS] == [
        ["cat", "sat", "mat"],
        ["dog", "cat", "cat", "bird", "fish"],
        ["bird", "owl"],
    ]
    # Lucene's BM25: idf = ln(1 + (N - df + 0.5) / (df + 0.5)); tf / (tf + k1 (1 - b + b dl / avgdl)).
    # N = 3, df(cat) = 2, avgdl = 10 / 3, k1 = 0.9, b = 0.4.
    idf = math.log(1 + 1.5 / 2.5)
    doc0 = idf * 1 / (1 + 0.9 * (0.6 + 0.4 * 3 / (10 / 3)))  # tf 1, length 3
    doc1 = idf * 2 / (2 + 0.9 * (0.6 + 0.4 * 5 / (10 / 3)))  # tf 2, length 5
    positions, scores = index.search("cat", top_k=10)
    assert positions.tolist() == [1, 0]
    np.testing.assert_allclose(scores, [doc1, doc0], rtol=1e-6)
    np.testing.assert_allclose(index.scores("cat"), [doc0, doc1, 0.0], rtol=1e-6)


def test_ranking_sanity() -> None:
    index = built(["apples and oranges", "only apples here", "bananas", "apples oranges pears"])
    positions, scores = index.search("oranges apples", top_k=10)
    assert set(positions[:2].tolist()) == {0, 3}
    assert positions.tolist()[-1] == 1
    assert 2 not in positions  # shares no term
    assert np.all(np.diff(scores) <= 0)
    assert positions.dtype == np.int64 and scores.dtype == np.float32


def test_fewer_results_than_top_k_and_truncation() -> None:
    index = built()
    assert len(index.search("owl", top_k=10)[0]) == 1
    assert index.search("bird cat", top_k=1)[0].tolist() == [1]
    assert len(index.search("bird", top_k=0)[0]) == 0


def test_ties_go_to_the_lower_position() -> None:
    index = built(["same words", "other", "same words", "same words"])
    assert index.search("words", top_k=2)[0].tolist() == [0, 2]


def test_query_without_indexable_terms() -> None:
    index = built()
    for query in ["", "the and of", "zebra", "!!!"]:
        positions, scores = index.search(query, top_k=5)
        assert positions.size == 0 and scores.size == 0
    assert not index.scores("zebra").any()


def test_empty_index() -> None:
    index = built([])
    assert len(index) == 0
    assert index.search("cat", top_k=5)[0].size == 0
    assert index.scores("cat").shape == (0,)
    stopwords_only = built(["the", "a an"])
    assert len(stopwords_only) == 2
    assert stopwords_only.search("the", top_k=5)[0].size == 0
    assert stopwords_only.scores("cat").tolist() == [0.0, 0.0]


def test_k1_controls_term_frequency_saturation() -> None:
    texts = ["cat dog", "cat cat", "bird fish"]
    scores_k1_0 = built(texts, k1=0.0, b=0.0).scores("cat")
    assert scores_k1_0[0] == pytest.approx(scores_k1_0[1])  # tf no longer matters
    scores_k1_2 = built(texts, k1=2.0, b=0.0).scores("cat")
    assert scores_k1_2[1] > scores_k1_2[0]


def test_b_controls_length_normalisation() -> None:
    texts = ["cat", "cat dog bird fish owl", "horse"]
    no_norm = built(texts, b=0.0).scores("cat")
    assert no_norm[0] == pytest.approx(no_norm[1])
    full_norm = built(texts, b=1.0).scores("cat")
    assert full_norm[0] > full_norm[1]


def test_allowed_mask_filters_positions() -> None:
    index = built()
    allowed = np.array([True, False, True])
    assert sorted(index.search("cat bird", top_k=10, allowed=allowed)[0].tolist()) == [0, 2]
    assert index.search("cat", top_k=10, allowed=np.zeros(3, dtype=bool))[0].size == 0
    with pytest.raises(ValueError, match="boolean mask of shape"):
        index.search("cat", top_k=10, allowed=np.array([1, 0, 1]))
    with pytest.raises(ValueError, match="boolean mask of shape"):
        index.search("cat", top_k=10, allowed=np.ones(4, dtype=bool))


def test_other_bm25_variants_only_return_matching_documents() -> None:
    for method in ("robertson", "atire", "bm25l", "bm25+"):
        index = built(method=method)
        positions, _ = index.search("owl", top_k=10)
        assert positions.tolist() == [2], method


def test_rebuild_replaces_the_index() -> None:
    index = built()
    index.build(["zebra"])
    assert len(index) == 1
    assert index.search("zebra", top_k=3)[0].tolist() == [0]
    assert index.search("cat", top_k=3)[0].size == 0


def test_invalid_parameters() -> None:
    with pytest.raises(ValueError, match="k1"):
        BM25Index(k1=-1)
    with pytest.raises(ValueError, match="b must"):
        BM25Index(b=1.5)
    with pytest.raises(ValueError, match="method"):
        BM25Index(method="tfidf")
    with pytest.raises(ValueError, match="stop word set"):
        BM25Index(stopwords="nope")
    with pytest.raises(ValueError, match="top_k"):
        built().search("cat", top_k=-1)
    with pytest.raises(TypeError, match="position 1"):
        BM25Index().build(["fine", None])  # type: ignore[list-item]


def test_save_load_round_trip(tmp_path: Path) -> None:
    index = built(k1=1.2, b=0.3, method="bm25+", stemmer="english")
    index.save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    assert (
        loaded.params
        == index.params
        == {
            "k1": 1.2,
            "b": 0.3,
            "method": "bm25+",
            "stemmer": "english",
            "stopwords": "lucene",
        }
    )
    assert len(loaded) == 3
    for query in ["cat", "bird owl", "nothing"]:
        for a, b in zip(index.search(query, 10), loaded.search(query, 10), strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(index.scores(query), loaded.scores(query))


def test_save_overwrites_and_empty_round_trip(tmp_path: Path) -> None:
    target = tmp_path / "bm25"
    built().save(target)
    built(["the"]).save(target)
    loaded = BM25Index.load(target)
    assert len(loaded) == 1
    assert loaded.search("cat", 5)[0].size == 0


def test_load_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "absent")):
        BM25Index.load(tmp_path / "absent")


def test_load_corrupt_metadata(tmp_path: Path) -> None:
    target = tmp_path / "bm25"
    built().save(target)
    (target / "bm25_index.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=f"corrupt BM25 index at {target}"):
        BM25Index.load(target)


def test_load_corrupt_arrays(tmp_path: Path) -> None:
    target = tmp_path / "bm25"
    built().save(target)
    (target / "data.csc.index.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(ValueError, match=f"corrupt BM25 index at {target}"):
        BM25Index.load(target)


def test_load_inconsistent_document_count(tmp_path: Path) -> None:
    target = tmp_path / "bm25"
    built().save(target)
    meta = json.loads((target / "bm25_index.json").read_text(encoding="utf-8"))
    meta["num_docs"] = 7
    (target / "bm25_index.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ValueError, match=r"bm25_index.json does not match the checksum"):
        BM25Index.load(target)
    # Files that match no checksum are still checked for consistency.
    with pytest.raises(ValueError, match="disagree"):
        BM25Index.read_files(target)


def test_load_refuses_changed_bytes_of_the_same_size(tmp_path: Path) -> None:
    """Damaged score values still parse; only the checksum recorded at save time catches them."""
    target = tmp_path / "bm25"
    built().save(target, generation=4)
    data = target / "data.csc.index.npy"
    raw = bytearray(data.read_bytes())
    raw[-4:] = b"\xff\xff\x7f\x7f"  # the last score becomes ~3.4e38
    data.write_bytes(bytes(raw))
    assert np.load(data).max() > 1e30  # still a valid array
    with pytest.raises(ValueError, match=f"corrupt BM25 index at {target}.*data.csc.index.npy does not match"):
        BM25Index.load(target)


def test_saved_state_round_trips(tmp_path: Path) -> None:
    built().save(tmp_path / "bm25", generation=4, store_id="abc")
    assert BM25Index.load(tmp_path / "bm25").state == {"generation": 4, "store_id": "abc"}
