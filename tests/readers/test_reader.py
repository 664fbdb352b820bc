"""SpanReader: span decoding, windows, passage selection, checkpoints, bad input, the component."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from haystack import Document

from dpr_components.reader_training.model import reader_from_encoder
from dpr_components.readers.inputs import (
    InputSettings,
    Row,
    build_rows,
    collate,
    tokenize_passage,
)
from dpr_components.readers.model import (
    ReaderLoadError,
    load_reader,
    save_reader,
)
from dpr_components.readers.predict import (
    ReadSettings,
    SpanPrediction,
    length_batches,
    rank_weight,
    read,
    row_logits,
)
from dpr_components.readers.spans import (
    answer_char_spans,
    answer_token_spans,
    best_spans,
    char_span,
    extend_to_words,
    token_span,
    windows,
)
from haystack_integrations.components.readers.dpr.span_reader import SpanReader
from tests.helpers.models import save_with_tokenizer, tiny_config

pytestmark = pytest.mark.usefixtures("one_thread")

SMALL = dict(max_length=48, stride=8, max_question_tokens=12, max_title_tokens=6)


class TargetReader(torch.nn.Module):
    """A stand-in reader with chosen logits: start on ``start_id``, end on ``end_id``, and a
    selection logit of 5 for rows containing ``select_id``."""

    def __init__(self, start_id: int, end_id: int, select_id: int | None = None) -> None:
        super().__init__()
        self.start_id, self.end_id, self.select_id = start_id, end_id, select_id

    def forward(self, input_ids: torch.Tensor, **_: object) -> SimpleNamespace:
        start = (input_ids == self.start_id).float() * 10
        end = (input_ids == self.end_id).float() * 10
        chosen = (input_ids == self.select_id).any(-1).float() * 5 if self.select_id else torch.zeros(len(input_ids))
        return SimpleNamespace(start_logits=start, end_logits=end, relevance_logits=chosen)


def _read(
    fake: torch.nn.Module,
    tokenizer: Any,
    passages: list[tuple[str, str]],
    scores: list[float] | None = None,
    **settings: Any,
) -> list[SpanPrediction]:
    """``read`` of "who wrote it" over ``passages`` with the small input settings and the read ``settings``."""
    return read(
        fake, tokenizer, "who wrote it", passages, InputSettings(**SMALL), ReadSettings(**settings), scores=scores
    )


def _id(tokenizer, word: str) -> int:
    ids = tokenizer(word, add_special_tokens=False)["input_ids"]
    assert len(ids) == 1, ids
    return ids[0]


# ---- spans -------------------------------------------------------------------------------------


def test_windows_cover_and_overlap() -> None:
    assert windows(5, 10, 3) == [(0, 5)]
    ws = windows(25, 10, 3)
    assert ws == [(0, 10), (7, 17), (14, 24), (21, 25)]
    # Every span of up to stride + 1 tokens lies whole in some window.
    for start in range(25):
        for length in range(1, 5):
            end = start + length - 1
            if end < 25:
                assert any(s <= start and end < e for s, e in ws)
    with pytest.raises(ValueError):
        windows(25, 10, 10)


def test_best_spans_respect_max_length_order_and_overlap() -> None:
    start = np.array([0.0, 5.0, 0.0, 0.0, 4.0, 0.0])
    end = np.array([0.0, 0.0, 0.0, 6.0, 0.0, 3.0])
    spans = best_spans(start, end, max_answer_length=3, top_n=3)
    assert (spans[0].start, spans[0].end) == (1, 3) and spans[0].score == 11.0
    assert all(s.start <= s.end < s.start + 3 for s in spans)
    assert all(a.end < b.start or b.end < a.start for a in spans for b in spans if a is not b)
    # Max length 1: only single tokens.
    assert all(s.start == s.end for s in best_spans(start, end, 1, 4))
    assert best_spans(np.zeros(0), np.zeros(0), 5) == []


def test_length_penalty_prefers_shorter_spans() -> None:
    start = np.array([5.0, 0.0, 4.0, 0.0, 0.0])
    end = np.array([0.0, 0.0, 4.5, 0.0, 6.0])
    assert [(s.start, s.end) for s in best_spans(start, end, 5)] == [(0, 4)]  # 11.0: the long span
    short = best_spans(start, end, 5, length_penalty=1.0)
    assert [(s.start, s.end) for s in short] == [(2, 2)] and short[0].score == pytest.approx(8.5)
    assert best_spans(start, end, 5, length_penalty=0.5)[0].score == pytest.approx(11.0 - 0.5 * 4)


def test_read_applies_the_length_prior_to_span_probability(tokenizer) -> None:
    fake = TargetReader(_id(tokenizer, "william"), _id(tokenizer, "shakespeare"))
    passages = [("Hamlet", "Hamlet was written by William Shakespeare.")]
    plain = _read(fake, tokenizer, passages)[0]
    penalised = _read(fake, tokenizer, passages, length_penalty=0.5)[0]
    assert plain.text == penalised.text == "William Shakespeare"
    tokens = penalised.span_score - plain.span_score  # −0.5 per extra token
    assert penalised.span_probability == pytest.approx(plain.span_probability * np.exp(tokens))
    for bad in (-1.0, 10.5, float("nan"), "0.3", False):
        with pytest.raises(ValueError, match="length_penalty"):
            ReadSettings(length_penalty=bad)  # type: ignore[arg-type]


def test_char_offsets_and_word_extension(tokenizer) -> None:
    text = "Marie Curie won the Nobel Prize in 1903, unbelievably."
    passage = tokenize_passage(tokenizer, text)
    tokens = tokenizer.convert_ids_to_tokens(passage.ids)
    piece = tokens.index("##bel")  # "unbelievably" is several WordPieces
    s, e = extend_to_words(piece, piece, passage.word_ids)
    assert text[slice(*char_span(passage.offsets, s, e))] == "unbelievably"
    span = token_span(passage.offsets, text.index("1903"), text.index("1903") + 4)
    assert text[slice(*char_span(passage.offsets, *span))] == "1903"


def test_answer_occurrences_all_found(tokenizer) -> None:
    text = "Paris is big. The capital, paris, is in France; Parisian food is not an answer."
    assert answer_char_spans(text, ["Paris"]) == [(0, 5), (27, 32)]
    passage = tokenize_passage(tokenizer, text)
    ids = [tokenizer("Paris", add_special_tokens=False)["input_ids"]]
    spans = answer_token_spans(text, passage.offsets, passage.ids, passage.word_ids, ["Paris"], ids)
    assert [text[slice(*char_span(passage.offsets, s, e))] for s, e in spans] == ["Paris", "paris"]


# ---- reading with chosen logits ----------------------------------------------------------------


def test_read_returns_span_with_character_offsets(tokenizer) -> None:
    fake = TargetReader(_id(tokenizer, "william"), _id(tokenizer, "shakespeare"))
    text = "Hamlet is a tragedy written by William Shakespeare around 1600."
    answers = read(fake, tokenizer, "who wrote hamlet", [("Hamlet", text)], InputSettings(**SMALL))
    best = answers[0]
    assert best.text == "William Shakespeare" == text[best.start : best.end]
    assert best.passage_score == pytest.approx(1.0)
    assert best.span_score == pytest.approx(20.0)


def test_read_respects_max_answer_length(tokenizer) -> None:
    fake = TargetReader(_id(tokenizer, "william"), _id(tokenizer, "1600"))
    text = "Hamlet is a tragedy written by William Shakespeare around 1600."
    long_ok = read(fake, tokenizer, "q", [(None, text)], InputSettings(**SMALL), ReadSettings(max_answer_length=10))[0]
    assert long_ok.text == "William Shakespeare around 1600"
    short = read(fake, tokenizer, "q", [(None, text)], InputSettings(**SMALL), ReadSettings(max_answer_length=2))[0]
    assert len(tokenizer(short.text, add_special_tokens=False)["input_ids"]) <= 2


def test_answer_across_a_window_boundary_is_found(tokenizer) -> None:
    settings = InputSettings(**SMALL)
    question, title = "who wrote it", "T"
    prefix = 1 + 3 + 1 + 1 + 1  # [CLS] who wrote it [SEP] t [SEP]
    room = settings.max_length - prefix
    # "william" is the last token of the first window, "shakespeare" the first token after it.
    text = " ".join(["x"] * (room - 1)) + " William Shakespeare " + " ".join(["y"] * 40)
    passage = tokenize_passage(tokenizer, text)
    rows = build_rows(tokenizer, question, [(title, passage)], settings)
    assert len(rows[0].input_ids) == settings.max_length and rows[0].window_end == room
    assert tokenizer.convert_ids_to_tokens(passage.ids)[room - 1 : room + 1] == ["william", "shakespeare"]
    assert len(rows) >= 2 and rows[1].window_start == room - settings.stride
    fake = TargetReader(_id(tokenizer, "william"), _id(tokenizer, "shakespeare"))
    best = read(fake, tokenizer, question, [(title, text)], settings)[0]
    assert best.text == "William Shakespeare" == text[best.start : best.end]
    assert best.span_score == pytest.approx(20.0)  # both logits from the same (second) window


def test_passage_selection_picks_the_selected_passage_first(tokenizer) -> None:
    fake = TargetReader(_id(tokenizer, "william"), _id(tokenizer, "shakespeare"), select_id=_id(tokenizer, "hamlet"))
    passages = [
        ("Sonnets", "The sonnets are by William Shakespeare too."),
        ("Hamlet", "Hamlet was written by William Shakespeare."),
        ("Other", "Nothing here at all."),
    ]
    answers = _read(fake, tokenizer, passages)
    assert answers[0].passage_index == 1
    scores = {a.passage_index: a.passage_score for a in answers}
    assert sum(scores.values()) == pytest.approx(1.0)
    assert [a.passage_index for a in answers] == [1, 0, 2]  # passage order, best first
    combined = _read(fake, tokenizer, passages, ranking="combined")
    assert [a.score for a in combined] == sorted((a.score for a in combined), reverse=True)
    assert combined[0].passage_index == 1


def test_rank_prior_weighs_passages_by_their_retrieval_rank(tokenizer) -> None:
    """With every passage selected alike, rank^-α decides; without the prior the reader alone does."""
    fake = TargetReader(_id(tokenizer, "william"), _id(tokenizer, "shakespeare"), select_id=_id(tokenizer, "hamlet"))
    passages = [
        ("Sonnets", "The sonnets are by William Shakespeare too."),
        ("Hamlet", "Hamlet was written by William Shakespeare."),
        ("Plays", "Many plays are by William Shakespeare."),
    ]
    for ranking in ("passage", "combined"):
        plain = _read(fake, tokenizer, passages, ranking=ranking)
        assert plain[0].passage_index == 1 and {a.rank_weight for a in plain} == {1.0}
        # The selected passage has e^5 ≈ 148 times the probability of the others: a prior of 1 keeps it
        # first (148 / 2 > 1), a prior of 8 gives the first passage the lead (2^8 = 256 > 148).
        mild = _read(fake, tokenizer, passages, ranking=ranking, rank_prior=1.0)
        assert mild[0].passage_index == 1
        assert {a.passage_index: a.rank_weight for a in mild} == pytest.approx({0: 1.0, 1: 0.5, 2: 1 / 3})
        strong = _read(fake, tokenizer, passages, ranking=ranking, rank_prior=8.0)
        assert strong[0].passage_index == 0
        key = (lambda a: a.passage_rank_score) if ranking == "passage" else (lambda a: a.score)
        assert [key(a) for a in strong] == sorted((key(a) for a in strong), reverse=True)


def test_score_prior_and_selection_weight_let_incoming_scores_choose(tokenizer) -> None:
    """The selected passage has e^5 the probability of the others; an incoming score 6 higher with γ = 1
    outweighs it, as does γ = 0.5 once the reader's selection counts at the power 0.5."""
    fake = TargetReader(_id(tokenizer, "william"), _id(tokenizer, "shakespeare"), select_id=_id(tokenizer, "hamlet"))
    passages = [
        ("Sonnets", "The sonnets are by William Shakespeare too."),
        ("Hamlet", "Hamlet was written by William Shakespeare."),
    ]
    scores = [6.0, 0.0]
    for ranking in ("passage", "combined"):

        def best(ranking: str = ranking, **settings: float) -> SpanPrediction:
            return _read(fake, tokenizer, passages, scores, ranking=ranking, **settings)[0]

        assert best().passage_index == 1 and best().score_weight == 1.0
        assert best(score_prior=0.5).passage_index == 1  # e^3 < e^5
        assert best(score_prior=1.0).passage_index == 0  # e^6 > e^5
        assert best(score_prior=0.5, selection_weight=0.5).passage_index == 0  # e^3 > e^2.5
        weights = {a.passage_index: a.score_weight for a in _read(fake, tokenizer, passages, scores, score_prior=0.5)}
        assert weights == pytest.approx({0: 1.0, 1: math.exp(-3.0)})
    with pytest.raises(ValueError, match=r"score_prior 0.5 needs each passage's incoming score"):
        _read(fake, tokenizer, passages, score_prior=0.5)
    for name in ("score_prior", "selection_weight"):
        for bad in (-0.5, 11.0, float("nan"), "1", True):
            with pytest.raises(ValueError, match=name):
                ReadSettings(**{name: bad})  # type: ignore[arg-type]


def test_span_reader_score_prior_needs_scores_and_round_trips(tiny_reader_dir: Path) -> None:
    reader = SpanReader(model=str(tiny_reader_dir), score_prior=0.25, selection_weight=0.5)
    data = reader.to_dict()["init_parameters"]
    assert data["score_prior"] == 0.25 and data["selection_weight"] == 0.5
    assert SpanReader.from_dict(reader.to_dict()).read_settings == reader.read_settings
    with pytest.raises(ValueError, match=r"score_prior 0.25 needs each document's retrieval score; 1 have none"):
        reader.run(query="who wrote hamlet", documents=[Document(content="Hamlet is a play.")])
    scored = [Document(content="Hamlet is a play by Shakespeare.", score=2.0), Document(content="Paris.", score=1.0)]
    answers = reader.run(query="who wrote hamlet", documents=scored)["answers"]
    weights = {a.document.content: a.meta["score_weight"] for a in answers}
    assert weights == pytest.approx({"Hamlet is a play by Shakespeare.": 1.0, "Paris.": math.exp(-0.25)})


def test_rank_weight_and_ranked_at() -> None:
    assert rank_weight(1, 3.0) == 1.0 and rank_weight(4, 0.5) == pytest.approx(0.5) and rank_weight(7, 0.0) == 1.0
    with pytest.raises(ValueError, match="start at 1"):
        rank_weight(0, 1.0)
    prediction = SpanPrediction(0, 0, 4, "text", 3.0, 0.5, 0.8)
    moved = prediction.ranked_at(2, 1.0)
    assert moved.score == pytest.approx(0.8 * 0.5 / 2) and moved.passage_rank_score == pytest.approx(0.4)
    assert prediction.score == pytest.approx(0.4)  # unchanged: predictions are immutable
    for bad in (-0.5, 11.0, float("nan"), "1", True):
        with pytest.raises(ValueError, match="rank_prior"):
            ReadSettings(rank_prior=bad)  # type: ignore[arg-type]


def _rows_of_lengths(lengths: list[int]) -> list[Row]:
    return [Row(i, 0, n - 1, [1] * n, 1) for i, n in enumerate(lengths)]


def test_length_batches_sort_by_length_and_split_evenly() -> None:
    rows = _rows_of_lengths([50, 10, 40, 20, 30, 60, 70, 80, 90, 15])
    batches = length_batches(rows, None)  # 10 rows, at most 8 per batch: two batches of five
    assert [len(b) for b in batches] == [5, 5]
    assert [len(rows[i].input_ids) for b in batches for i in b] == sorted(len(r.input_ids) for r in rows)
    assert sorted(i for b in batches for i in b) == list(range(10))
    assert [len(b) for b in length_batches(rows, 3)] == [3, 3, 2, 2]
    assert length_batches([], None) == []


def test_collate_pads_to_a_rounded_length_within_max_length() -> None:
    rows = _rows_of_lengths([5, 11])
    assert collate(rows, 0)["input_ids"].shape == (2, 11)
    batch = collate(rows, 0, max_length=128)
    assert batch["input_ids"].shape == (2, 16)
    assert batch["attention_mask"].sum(dim=1).tolist() == [5, 11]
    assert batch["passage_mask"][:, 11:].sum() == 0
    assert collate(_rows_of_lengths([126]), 0, max_length=127)["input_ids"].shape == (1, 127)


# ---- the real (tiny) model ---------------------------------------------------------------------


def test_batched_forward_equals_one_by_one(tiny_reader_dir: Path) -> None:
    reader, tokenizer = load_reader(tiny_reader_dir)
    texts = ["Short one.", "A much longer passage with many more words than the first one has, " * 3, "Middle length."]
    passages = [(f"T{i}", tokenize_passage(tokenizer, t)) for i, t in enumerate(texts)]
    rows = build_rows(tokenizer, "what is it", passages, InputSettings(max_length=128, stride=16))
    batched = row_logits(reader, rows, tokenizer.pad_token_id, 100, bf16=False, max_length=128)
    single = row_logits(reader, rows, tokenizer.pad_token_id, 1, bf16=False)
    assert len(set(len(r.input_ids) for r in rows)) > 1  # padding really happens
    for (s1, e1, r1), (s2, e2, r2) in zip(batched, single, strict=True):
        np.testing.assert_allclose(s1, s2, atol=1e-5)
        np.testing.assert_allclose(e1, e2, atol=1e-5)
        assert r1 == pytest.approx(r2, abs=1e-5)


def _logits(reader, tokenizer):
    rows = build_rows(
        tokenizer,
        "who wrote hamlet",
        [("Hamlet", tokenize_passage(tokenizer, "Shakespeare wrote it."))],
        InputSettings(max_length=64, stride=8, max_question_tokens=16, max_title_tokens=8),
    )
    batch = collate(rows, tokenizer.pad_token_id)
    with torch.inference_mode():
        out = reader(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], return_dict=True)
    return out.start_logits, out.end_logits, out.relevance_logits


def test_save_load_round_trip_and_fp16_export(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    reader, tokenizer = reader_from_encoder(str(tiny_encoder_dir), seed=5)
    reader.eval()
    save_reader(reader, tokenizer, tmp_path / "fp32", info={"note": "test"})
    loaded, loaded_tokenizer = load_reader(tmp_path / "fp32")
    assert json.loads((tmp_path / "fp32" / "config.json").read_text())["architectures"] == ["DPRReader"]
    for a, b in zip(_logits(reader, tokenizer), _logits(loaded, loaded_tokenizer), strict=True):
        assert torch.equal(a, b)
    save_reader(reader, tokenizer, tmp_path / "fp16", dtype=torch.float16)
    half, _ = load_reader(tmp_path / "fp16")
    assert next(half.parameters()).dtype == torch.float32
    for a, b in zip(_logits(reader, tokenizer), _logits(half, tokenizer), strict=True):
        torch.testing.assert_close(a, b, atol=2e-2, rtol=2e-2)
    size = lambda p: (p / "model.safetensors").stat().st_size  # noqa: E731
    assert size(tmp_path / "fp16") < 0.6 * size(tmp_path / "fp32")


def test_hf_dpr_reader_folder_loads(tokenizer, tmp_path: Path) -> None:
    """The facebook/dpr-reader-* layout: DPRReader saved by transformers itself."""
    from transformers import DPRConfig, DPRReader

    torch.manual_seed(0)
    config = tiny_config(DPRConfig, len(tokenizer), num_hidden_layers=1, max_position_embeddings=512)
    save_with_tokenizer(DPRReader(config), tokenizer, tmp_path)
    reader = SpanReader(model=str(tmp_path), precision="fp32")
    answers = reader.run("who", [Document(content="Somebody did it.")])["answers"]
    assert len(answers) == 1 and answers[0].data


def test_missing_heads_or_wrong_folders_are_errors(tiny_reader_dir: Path, tiny_bert_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    broken = tmp_path / "broken"
    broken.mkdir()
    for file in tiny_reader_dir.iterdir():
        (broken / file.name).write_bytes(file.read_bytes())
    weights = load_file(str(broken / "model.safetensors"))
    headless = {k: v for k, v in weights.items() if "qa_" not in k}
    save_file(headless, str(broken / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ReaderLoadError, match="random"):
        load_reader(broken)
    with pytest.raises(ReaderLoadError, match="not a DPRReader"):
        load_reader(tiny_bert_dir)
    with pytest.raises(ReaderLoadError, match="does not exist"):
        load_reader(tmp_path / "nowhere")
    with pytest.raises(ReaderLoadError, match="without reader heads"):
        load_reader("bundled:all-MiniLM-L6-v2")


# ---- the component -----------------------------------------------------------------------------


def test_component_answers_with_offsets_and_meta(tiny_reader_dir: Path) -> None:
    reader = SpanReader(
        model=str(tiny_reader_dir),
        top_k=3,
        precision="fp32",
        max_length=64,
        stride=8,
        max_question_tokens=16,
        max_title_tokens=8,
    )
    documents = [
        Document(id="a", content="Hamlet is a tragedy written by William Shakespeare.", meta={"title": "Hamlet"}),
        Document(id="b", content="Jupiter is the largest planet of the Solar System. " * 10, meta={"title": "Jupiter"}),
        Document(id="c", content="   "),
        Document(id="d", content=None),
    ]
    answers = reader.run("who wrote hamlet", documents, top_k=10)["answers"]
    assert 1 <= len(answers) <= 2  # one per readable document, however many asked for
    assert {a.document.id for a in answers} <= {"a", "b"}
    for answer in answers:
        assert answer.data == answer.document.content[answer.document_offset.start : answer.document_offset.end]
        assert set(answer.meta) == {"passage_score", "span_score", "span_probability", "rank_weight", "score_weight"}
        assert all(isinstance(v, float) for v in answer.meta.values())
    assert [a.score for a in answers] == sorted((a.score for a in answers), reverse=True)
    assert len(reader.run("who wrote hamlet", documents, top_k=1)["answers"]) == 1


def test_component_bad_input(tiny_reader_dir: Path) -> None:
    reader = SpanReader(model=str(tiny_reader_dir), precision="fp32")
    assert reader.run("who", [])["answers"] == []
    assert reader.run("who", [Document(content="")])["answers"] == []
    for question in ("", "   "):
        with pytest.raises(ValueError, match="empty"):
            reader.run(question, [Document(content="text")])
    with pytest.raises(ValueError):
        reader.run("who", [Document(content="text")], top_k=0)
    with pytest.raises(ValueError, match="stride"):
        SpanReader(model=str(tiny_reader_dir), max_length=128, stride=60)
    with pytest.raises(ValueError, match="leaves only"):
        SpanReader(model=str(tiny_reader_dir), max_length=64)
    with pytest.raises(ValueError, match="ranking"):
        SpanReader(model=str(tiny_reader_dir), ranking="best")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positions"):
        SpanReader(model=str(tiny_reader_dir), max_length=1024).warm_up()
    with pytest.raises(ReaderLoadError):
        SpanReader(model="models/no-such-reader").run("who", [Document(content="text")])


def test_component_serialisation_and_warm_up(tiny_reader_dir: Path) -> None:
    reader = SpanReader(
        model=str(tiny_reader_dir),
        top_k=2,
        ranking="combined",
        spans_per_passage=2,
        stride=32,
        precision="fp32",
        batch_size=4,
        rank_prior=1.0,
    )
    data = reader.to_dict()
    assert data["init_parameters"]["rank_prior"] == 1.0
    assert data["type"] == "haystack_integrations.components.readers.dpr.span_reader.SpanReader"
    again = SpanReader.from_dict(data)
    assert again.to_dict() == data
    reader.warm_up()
    model = reader._reader
    reader.warm_up()
    assert reader._reader is model
    docs = [Document(content="The quick brown fox jumps over the lazy dog.", meta={"title": "Fox"})]
    first = reader.run("what jumps", docs)["answers"]
    assert [a.data for a in first] == [a.data for a in again.run("what jumps", docs)["answers"]]


# ---- NaN and infinity ----------------------------------------------------------------------------


def test_nan_weights_are_neither_saved_nor_loaded(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    from dpr_components.encoders.model_files import ModelFileError

    reader, tokenizer = reader_from_encoder(str(tiny_encoder_dir), seed=5)
    with torch.no_grad():
        reader.span_predictor.qa_classifier.bias[0] = 1e6  # finite in float32, infinite in float16
    with pytest.raises(
        ModelFileError, match=r"not saved to .*half: its tensor span_predictor.qa_classifier.bias holds"
    ):
        save_reader(reader, tokenizer, tmp_path / "half", dtype=torch.float16)
    assert not (tmp_path / "half").exists()
    save_reader(reader, tokenizer, tmp_path / "reader")
    weights = load_file(str(tmp_path / "reader" / "model.safetensors"))
    weights["span_predictor.qa_outputs.weight"][0, 0] = float("nan")
    save_file(weights, str(tmp_path / "reader" / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(
        ModelFileError, match=r"hold NaN or infinite values \(tensor span_predictor.qa_outputs.weight\)"
    ):
        load_reader(tmp_path / "reader")


def test_nan_logits_are_an_error_naming_the_reader(tiny_reader_dir: Path) -> None:
    from dpr_components.readers.predict import NonFiniteLogits

    class NanStarts(TargetReader):
        def forward(self, input_ids: torch.Tensor, **_: object) -> SimpleNamespace:
            out = super().forward(input_ids)
            return SimpleNamespace(**{**vars(out), "start_logits": out.start_logits * float("nan")})

    reader = SpanReader(model=str(tiny_reader_dir), precision="fp32")
    reader.warm_up()
    reader._reader = NanStarts(0, 0)  # what weights that overflow compute
    with pytest.raises(NonFiniteLogits, match=rf"^the reader {tiny_reader_dir} computed NaN or infinite scores"):
        reader.run("who wrote hamlet", [Document(content="Hamlet is a tragedy by William Shakespeare.")])
