"""Selection splits: a data-free membership rule, carving and exclusion as complements, atomic files."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from dpr_components.dpr_data.selection_split import (
    NQ_SELECTION,
    SQUAD_SELECTION,
    SelectionSplit,
    check_fraction,
    ids_digest,
    in_selection,
    normalise_question,
    partition,
    question_hash,
    split_for_source,
)
from training.common import selection_splits
from training.common.selection_splits import carve_all, write_part
from training.retriever.mine_negatives import select

QUESTIONS = [f"who wrote book number {i} of the series" for i in range(2000)]
HALF = SelectionSplit("nq-train", "nq/train.jsonl", 0.5, "gold-passage hits at k")
QUARTER = SelectionSplit("squad-train", "squad/train-v1.1.json", 0.25, "answer hits")


def _nq_record(i: int) -> dict:
    return {
        "id": f"nq-{i}",
        "question": QUESTIONS[i],
        "answers": [f"author {i}"],
        "positive_ctxs": [{"title": f"Book {i}", "text": f"Book {i} was written by author {i}."}],
    }


def _squad(n: int) -> dict:
    qas = [
        {"id": f"sq-{i}", "question": QUESTIONS[i], "answers": [{"text": "author", "answer_start": 0}]}
        for i in range(n)
    ]
    return {"version": "1.1", "data": [{"title": "Some_Book", "paragraphs": [{"context": "author of it", "qas": qas}]}]}


@pytest.fixture()
def data_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    (folder / "nq").mkdir(parents=True)
    (folder / "squad").mkdir()
    lines = [json.dumps(_nq_record(i)) for i in range(400)]
    (folder / "nq" / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "squad" / "train-v1.1.json").write_text(json.dumps(_squad(400)), encoding="utf-8")
    pool = [
        {"id": f"doc-{i}", "title": f"Book {i}", "text": f"Book {i}  was written by author {i}."} for i in range(400)
    ]
    (folder / "pool.jsonl").write_text("".join(json.dumps(d) + "\n" for d in pool), encoding="utf-8")
    return folder


def test_membership_is_deterministic_and_normalised() -> None:
    assert question_hash("Who wrote Hamlet?") == question_hash("  who   WROTE hamlet? ")
    # a full-width W, folded by NFKC
    assert normalise_question("Ｗho\twrote  Hamlet") == "who wrote hamlet"  # noqa: RUF001
    assert 0 <= question_hash("x") < 1
    # A fixed value: the rule must not change between versions or machines.
    assert question_hash("who wrote hamlet") == pytest.approx(0.9650291644302877, abs=1e-15)
    assert ids_digest(["b", "a"]) == ids_digest(["a", "b"])
    first = [q for q in QUESTIONS if in_selection(q, 0.1)]
    assert first == [q for q in QUESTIONS if in_selection(q, 0.1)]


def test_membership_ignores_file_order() -> None:
    shuffled = QUESTIONS[:]
    random.Random(3).shuffle(shuffled)
    chosen, _ = partition(QUESTIONS, 0.2, str)
    chosen_shuffled, _ = partition(shuffled, 0.2, str)
    assert sorted(chosen) == sorted(chosen_shuffled)


@pytest.mark.parametrize("fraction", [0.05, 0.14, 0.5])
def test_fraction_is_respected_approximately(fraction: float) -> None:
    chosen, rest = partition(QUESTIONS, fraction, str)
    assert len(chosen) + len(rest) == len(QUESTIONS)
    expected = fraction * len(QUESTIONS)
    assert abs(len(chosen) - expected) < 4 * (expected * (1 - fraction)) ** 0.5


@pytest.mark.parametrize("bad", [0, 1, -0.1, 1.5, float("nan"), True, "0.1"])
def test_bad_fraction_is_one_line_error(bad: object) -> None:
    with pytest.raises(ValueError, match="selection fraction") as error:
        check_fraction(bad)  # type: ignore[arg-type]
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="selection fraction"):
        partition(QUESTIONS, bad, str)  # type: ignore[arg-type]


def test_split_for_source_names() -> None:
    assert split_for_source("nq/train.jsonl") is NQ_SELECTION
    assert split_for_source("runs/dpr-nq/data/nq-train-bm25.jsonl") is NQ_SELECTION
    assert split_for_source("runs/dpr-nq/data/squad-train-7000-bm25.jsonl") is SQUAD_SELECTION
    assert split_for_source("/data/squad/train-v1.1.json") is SQUAD_SELECTION
    assert split_for_source("runs/dpr-nq/data/nq-dev-bm25.jsonl") is None
    assert split_for_source("training/corpus.jsonl") is None


def test_carving_and_exclusion_are_complements(data_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "selection"
    carved = carve_all(out, data_folder, data_folder / "pool.jsonl", (HALF, QUARTER))
    nq_selected = [json.loads(line) for line in (out / "nq-train-selection.jsonl").read_text().splitlines()]
    assert 150 < len(nq_selected) < 250
    assert all(r["gold_ids"] == [r["id"].replace("nq-", "doc-")] for r in nq_selected)
    assert all(r["positive_ctxs"] and r["answers"] for r in nq_selected)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["splits"]["nq-train"]["ids_digest"] == ids_digest(r["id"] for r in nq_selected)
    assert manifest["splits"]["squad-train"]["selection_questions"] == len(carved[1].ids)

    # The training side of the same file, as a recipe writes it: no question on both sides, none lost.
    source = data_folder / "nq" / "train.jsonl"
    kept, dropped = write_part(source, tmp_path / "nosel.jsonl", HALF, "training")
    training = {json.loads(line)["question"] for line in (tmp_path / "nosel.jsonl").read_text().splitlines()}
    selected = {r["question"] for r in nq_selected}
    assert not training & selected
    assert training | selected == set(QUESTIONS[:400])
    assert (kept, dropped) == (400 - len(selected), len(selected))
    kept_sel, _ = write_part(source, tmp_path / "sel.jsonl", HALF, "selection")
    assert kept_sel == len(selected)

    # The same rule in the recipes' own loading: mine_negatives (examples) and train_reader (mined questions).
    from dpr_components.dpr_data.loading import load_training_examples

    examples = load_training_examples(data_folder / "squad" / "train-v1.1.json").examples
    _, rest = partition(examples, QUARTER.fraction, lambda e: e.question)
    assert {e.id for e in select(rest, None, None)}.isdisjoint(carved[1].ids)
    assert len(rest) + len(carved[1].ids) == 400


def test_question_files_load_as_eval_questions(data_folder: Path, tmp_path: Path) -> None:
    from dpr_components.evaluation.questions import load_questions

    carve_all(tmp_path / "sel", data_folder, None, (HALF, QUARTER))
    questions = load_questions(tmp_path / "sel" / "squad-train-selection.jsonl")
    assert questions and all(q.answers == ["author"] for q in questions)


def test_writes_are_atomic(data_folder: Path, tmp_path: Path) -> None:
    source = tmp_path / "mined.jsonl"
    good = [json.dumps(_nq_record(i)) for i in range(50)]
    source.write_text("\n".join([*good, "{not json"]) + "\n", encoding="utf-8")
    target = tmp_path / "out.jsonl"
    target.write_text("previous\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"mined.jsonl, line 51"):
        write_part(source, target, HALF, "training")
    assert target.read_text(encoding="utf-8") == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    # A missing second file: nothing is written, not even the first split's file.
    (data_folder / "squad" / "train-v1.1.json").unlink()
    with pytest.raises(FileNotFoundError, match="squad-train: training file"):
        carve_all(tmp_path / "sel", data_folder, None, (HALF, QUARTER))
    assert not (tmp_path / "sel").exists()


def test_command_line_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = selection_splits.main(["--out", str(tmp_path / "sel"), "--data-dir", str(tmp_path / "missing")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1
    with pytest.raises(FileNotFoundError, match=r"training file .* not found"):
        write_part(tmp_path / "absent.jsonl", tmp_path / "x.jsonl", HALF, "training")


def test_command_line_prints_sizes_and_digest(
    data_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selection_splits, "SPLITS", (HALF, QUARTER))
    monkeypatch.setattr(selection_splits, "POOL", "pool.jsonl")
    assert selection_splits.main(["--out", str(tmp_path / "sel"), "--data-dir", str(data_folder)]) == 0
    out = capsys.readouterr().out
    assert "nq-train:" in out and "of 400 questions" in out and "ids digest" in out


@pytest.mark.integration
def test_real_selection_sizes(shared_data: Path, tmp_path: Path) -> None:
    carved = carve_all(tmp_path / "sel", shared_data, shared_data / "wiki" / "documents.jsonl")
    sizes = {c.split.name: (c.questions, len(c.ids), len(c.records)) for c in carved}
    assert sizes == {"nq-train": (7167, 998, 997), "squad-train": (87599, 999, 999)}
    assert carved[0].summary()["ids_digest"] == "3ae16ecee49540fa"
    assert carved[1].summary()["ids_digest"] == "c286b09ebfd79d4c"
