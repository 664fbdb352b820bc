"""Training data loaders: DPR JSON / JSON lines, our JSONL, SQuAD JSON, datasets sources, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpr_components.dpr_data.examples import Ctx
from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.dpr_data.records import RecordError

DPR_RECORD = {
    "dataset": "nq_dev_psgs_w100",
    "question": "who sings does he love me with reba",
    "answers": ["Linda Davis"],
    "positive_ctxs": [
        {"title": "Does He Love You", "text": "sung by Reba and Linda Davis", "score": 1000, "passage_id": "11828866"}
    ],
    "negative_ctxs": [{"title": "Random", "text": "a random passage", "score": 0, "passage_id": "1"}],
    "hard_negative_ctxs": [{"title": "Reba", "text": "Reba McEntire is a singer", "score": 13.4, "passage_id": "2"}],
}


def _jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_dpr_json_array_and_json_lines_give_the_same_examples(tmp_path: Path) -> None:
    no_positive = {**DPR_RECORD, "question": "unanswered", "positive_ctxs": []}
    array = tmp_path / "train.json"
    array.write_text(json.dumps([DPR_RECORD, no_positive], indent=2), encoding="utf-8")
    lines = _jsonl(tmp_path / "train.jsonl", [DPR_RECORD, no_positive])
    for path in (array, lines):
        loaded = load_training_examples(path)
        assert loaded.skipped_without_positive == 1 and len(loaded.examples) == 1
        example = loaded.examples[0]
        assert example.positives == [Ctx("Does He Love You", "sung by Reba and Linda Davis")]
        assert example.negatives == [Ctx("Random", "a random passage")]
        assert example.hard_negatives == [Ctx("Reba", "Reba McEntire is a singer")]
        assert example.answers == ["Linda Davis"]
    assert "1 skipped" in load_training_examples(array).summary()


def test_our_jsonl_has_ids_and_no_negatives(tmp_path: Path) -> None:
    record = {
        "id": "nq-train-1",
        "question": "q?",
        "answers": ["a"],
        "positive_ctxs": [{"title": "T", "text": "a text"}],
    }
    example = load_training_examples(_jsonl(tmp_path / "nq.jsonl", [record])).examples[0]
    assert example.id == "nq-train-1" and example.hard_negatives == [] and example.negatives == []
    assert example.to_dpr_record()["positive_ctxs"] == [{"title": "T", "text": "a text"}]


def test_squad_json(tmp_path: Path) -> None:
    squad = {
        "version": "1.1",
        "data": [
            {
                "title": "Notre_Dame",
                "paragraphs": [
                    {
                        "context": "Common Sense began in 1987.",
                        "qas": [
                            {
                                "id": "s1",
                                "question": "When did Common Sense begin?",
                                "answers": [{"text": "1987", "answer_start": 22}],
                            },
                            {"id": "s2", "question": "Unanswerable?", "answers": [], "is_impossible": True},
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(squad), encoding="utf-8")
    loaded = load_training_examples(path)
    assert loaded.skipped_without_positive == 1
    (example,) = loaded.examples
    assert example.positives == [Ctx("Notre Dame", "Common Sense began in 1987.")] and example.answers == ["1987"]


def test_datasets_sources_offline(tmp_path: Path) -> None:
    squad_rows = _jsonl(
        tmp_path / "rows.jsonl",
        [
            {
                "id": "r1",
                "question": "When?",
                "context": "It was 1987.",
                "title": "A_B",
                "answers": {"text": ["1987"], "answer_start": [7]},
            },
        ],
    )
    (example,) = load_training_examples(f"hf:{squad_rows}").examples
    assert example.positives == [Ctx("A B", "It was 1987.")] and example.id == "r1"
    import datasets

    parquet = tmp_path / "dpr.parquet"
    datasets.Dataset.from_list([{k: v for k, v in DPR_RECORD.items() if k != "negative_ctxs"}]).to_parquet(str(parquet))
    (example,) = load_training_examples(parquet).examples
    assert example.hard_negatives == [Ctx("Reba", "Reba McEntire is a singer")]
    with pytest.raises(RecordError, match="columns"):
        load_training_examples(f"hf:{_jsonl(tmp_path / 'bad.jsonl', [{'text': 'x'}])}")


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"answers": [], "positive_ctxs": []}, r"line 2: missing field 'question'"),
        ({"question": "q", "answers": "a", "positive_ctxs": []}, r"line 2: field 'answers': expected a list"),
        ({"question": "q", "answers": []}, r"line 2: missing field 'positive_ctxs'"),
        ({"question": "q", "positive_ctxs": [{"title": "t"}]}, r"line 2: field 'positive_ctxs\[0\].text': missing"),
        (
            {"question": "q", "positive_ctxs": [{"text": "x"}], "hard_negative_ctxs": [{"text": 3}]},
            r"line 2: field 'hard_negative_ctxs\[0\].text': a int",
        ),
        ({"question": "", "positive_ctxs": [{"text": "x"}]}, r"line 2: field 'question' is empty"),
    ],
)
def test_malformed_records_name_file_line_and_field(tmp_path: Path, record: dict, message: str) -> None:
    path = _jsonl(tmp_path / "bad.jsonl", [DPR_RECORD, record])
    with pytest.raises(RecordError, match=message) as error:
        load_training_examples(path)
    assert str(path) in str(error.value)


def test_malformed_array_record_names_its_index(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([DPR_RECORD, {"question": 5, "positive_ctxs": []}]), encoding="utf-8")
    with pytest.raises(RecordError, match=r"record 1: field 'question': expected a string"):
        load_training_examples(path)


def test_bad_json_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(DPR_RECORD) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(RecordError, match=r"line 2: bad JSON"):
        load_training_examples(path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_training_examples(tmp_path / "missing.jsonl")


@pytest.mark.parametrize("name", ["nq-dev-10.jsonl", "squad1-dev-10.jsonl"])
def test_real_dpr_biencoder_samples(shared_data: Path, name: str) -> None:
    path = shared_data / "dpr-format" / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    loaded = load_training_examples(path)
    assert len(loaded.examples) + loaded.skipped_without_positive == 10
    assert all(e.hard_negatives and e.negatives and e.answers for e in loaded.examples)
    assert all(p.text and p.title for e in loaded.examples for p in e.positives)


def test_real_nq_train_first_records(shared_data: Path) -> None:
    path = shared_data / "nq" / "train.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    loaded = load_training_examples(path, limit=50)
    assert len(loaded.examples) == 50 and all(e.id.startswith("nq-train-") for e in loaded.examples)


# ---- sizes -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"question": "q" * 30_001}, r"line 2: field 'question' has 30,001 characters; the limit is 30,000"),
        (
            {"positive_ctxs": [{"text": "x" * 100_001}]},
            r"line 2: field 'positive_ctxs\[0\].text' has 100,001 characters",
        ),
        (
            {"negative_ctxs": [{"title": "t" * 1_001, "text": "x"}]},
            r"line 2: field 'negative_ctxs\[0\].title' has 1,001",
        ),
    ],
)
def test_fields_beyond_their_limits_are_refused(tmp_path: Path, change: dict, message: str) -> None:
    path = _jsonl(tmp_path / "big.jsonl", [DPR_RECORD, {**DPR_RECORD, **change}])
    with pytest.raises(RecordError, match=message):
        load_training_examples(path)
    at_limit = {"question": "q" * 30_000, "positive_ctxs": [{"title": "t" * 1_000, "text": "x" * 100_000}]}
    assert load_training_examples(_jsonl(tmp_path / "ok.jsonl", [{**DPR_RECORD, **at_limit}])).examples


def test_line_and_whole_file_sizes_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpr_components.dpr_data import loading as data

    monkeypatch.setattr(data, "MAX_LINE_BYTES", 1_000)
    long_record = {**DPR_RECORD, "question": "why " * 300}
    for line in (1, 2):
        records = [DPR_RECORD, DPR_RECORD]
        records[line - 1] = long_record
        path = _jsonl(tmp_path / f"long-line-{line}.jsonl", records)
        with pytest.raises(RecordError, match=rf"{path}:{line}: the line is longer than 1,000 bytes"):
            load_training_examples(path)
    # SQuAD's files are one line: a line too long for a record is read as one document.
    qas = [{"id": "a", "question": "who? " * 300, "answers": [{"text": "me", "answer_start": 0}]}]
    squad = tmp_path / "squad.json"
    squad.write_text(json.dumps({"data": [{"title": "T", "paragraphs": [{"context": "me", "qas": qas}]}]}))
    assert len(load_training_examples(squad).examples) == 1
    monkeypatch.setattr(data, "MAX_JSON_FILE_BYTES", 1_000)
    with pytest.raises(
        RecordError, match=rf"{squad}: a JSON document of 1,\d+ bytes is read whole and may have at most 1,000"
    ):
        load_training_examples(squad)


def test_real_training_files_are_within_the_limits(shared_data: Path) -> None:
    """The longest SQuAD "question" (25,651 characters) and NQ gold paragraph (34,961) load."""
    for name, count in (("nq/train.jsonl", 7_167), ("squad/train-v1.1.json", 87_599)):
        path = shared_data / name
        if not path.is_file():
            pytest.skip(f"{path} is absent")
        assert len(load_training_examples(path).examples) == count
