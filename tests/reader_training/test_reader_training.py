"""Reader training: the loss, mining, training groups, and resuming an interrupted run exactly."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from haystack import Document
from safetensors import safe_open

from dpr_components.reader_training.batching import build_group, collate_groups
from dpr_components.reader_training.data import (
    MinedQuestion,
    Passage,
    PassageLookup,
    ReaderMiningSettings,
    SourceQuestion,
    mine,
    read_mined,
    write_mined,
)
from dpr_components.reader_training.loss import (
    reader_loss,
    selection_log_likelihood,
    selection_loss,
    span_log_likelihood,
)
from dpr_components.reader_training.model import reader_from_encoder
from dpr_components.reader_training.train import ReaderTrainingSettings, train
from dpr_components.readers.inputs import InputSettings
from dpr_components.readers.model import load_reader
from dpr_components.runs.run_log import read_log
from haystack_integrations.components.readers.dpr.span_reader import SpanReader
from tests.helpers.reader_training import (
    PASSAGES,
    DictStore,
    assert_same_state,
    mined_questions,
    reader_config,
    reader_state,
    train_reader,
)

SETTINGS = InputSettings(max_length=64, stride=8, max_question_tokens=16, max_title_tokens=8)


# ---- loss --------------------------------------------------------------------------------------


def test_span_loss_marginalises_over_all_occurrences() -> None:
    start = torch.tensor([[9.0, 1.0, 2.0, 0.0]])
    end = torch.tensor([[9.0, 0.0, 1.0, 1.0]])
    mask = torch.tensor([[False, True, True, True]])  # position 0 is the question: never an answer
    spans = torch.tensor([[[1, 2], [2, 3]]])
    got = span_log_likelihood(start, end, mask, spans, torch.tensor([[True, True]]))
    p_start = np.exp([1, 2, 0]) / np.exp([1, 2, 0]).sum()
    p_end = np.exp([0, 1, 1]) / np.exp([0, 1, 1]).sum()
    expected = math.log(p_start[0] * p_end[1] + p_start[1] * p_end[2])
    assert float(got[0]) == pytest.approx(expected, rel=1e-5)
    # A padded (masked) span slot changes nothing; one span alone is the plain log-likelihood.
    padded = span_log_likelihood(start, end, mask, torch.tensor([[[1, 2], [0, 0]]]), torch.tensor([[True, False]]))
    assert float(padded[0]) == pytest.approx(math.log(p_start[0] * p_end[1]), rel=1e-5)
    with pytest.raises(ValueError, match="at least one"):
        span_log_likelihood(start, end, mask, spans, torch.tensor([[False, False]]))


def test_reader_loss_adds_selection_over_real_passages() -> None:
    relevance = torch.tensor([[2.0, 1.0, 50.0]])
    row_mask = torch.tensor([[True, True, False]])  # the third row is padding
    selection = selection_log_likelihood(relevance, row_mask)
    assert float(selection[0]) == pytest.approx(math.log(math.exp(2) / (math.exp(2) + math.exp(1))), rel=1e-5)
    tokens = 4
    start = torch.zeros(3, tokens)
    end = torch.zeros(3, tokens)
    passage_mask = torch.ones(3, tokens, dtype=torch.bool)
    loss, parts = reader_loss(
        start, end, relevance.view(-1), passage_mask, row_mask, torch.tensor([[[0, 0]]]), torch.tensor([[True]])
    )
    assert parts["span_loss"] == pytest.approx(2 * math.log(tokens), rel=1e-5)
    assert float(loss) == pytest.approx(parts["span_loss"] + parts["selection_loss"], rel=1e-5)


def test_selection_loss_is_minus_the_log_softmax_of_the_positive() -> None:
    relevance = torch.tensor([2.0, 1.0, 0.0, 0.5, 3.0, 50.0])  # two questions of m=3, positive first
    row_mask = torch.tensor([[True, True, True], [True, True, False]])  # the last row is padding
    loss, parts = selection_loss(relevance, row_mask)
    first = -math.log(math.exp(2) / (math.exp(2) + math.exp(1) + math.exp(0)))
    second = -math.log(math.exp(0.5) / (math.exp(0.5) + math.exp(3)))
    assert float(loss) == pytest.approx((first + second) / 2, rel=1e-5)
    assert parts["span_loss"] == 0.0 and parts["selection_loss"] == pytest.approx(float(loss))


# ---- data ---------------------------------------------------------------------------------------


def test_mine_splits_positives_and_negatives(tmp_path: Path) -> None:
    from dpr_components.reader_training.data import SourceQuestion

    docs = [PASSAGES["n0"], PASSAGES["p0"], PASSAGES["n1"]]
    questions = [
        SourceQuestion("q", "where is the eiffel tower", ["Paris"], None),
        SourceQuestion("r", "unanswerable", ["Atlantis"], None),
    ]
    mined = mine(questions, "retrieved", [lambda i: docs], progress=False)
    assert len(mined) == 1  # no positive for "Atlantis": dropped
    assert mined[0].positive_ids == ["p0"] and mined[0].negative_ids == ["n0", "n1"]
    assert mined[0].top_ids == ["n0", "p0", "n1"]
    assert len(mine(questions, "retrieved", [lambda i: docs], progress=False, keep_all=True)) == 2
    write_mined(tmp_path / "m.jsonl", mined)
    assert read_mined(tmp_path / "m.jsonl") == mined


def test_gold_document_passages_are_positives_answer_or_not() -> None:
    docs = [
        Document(id="a#0", content="Paris is a big city.", meta={"document_id": "a"}),
        Document(id="g#1", content="The tower was finished in 1889.", meta={"document_id": "g"}),
        Document(id="n#0", content="Filler about rivers.", meta={"document_id": "n"}),
    ]
    gold = Passage("T", "The tower, finished in 1889.")  # no answer string either
    question = SourceQuestion("q", "where is the tower", ["Paris"], gold, gold_ids=["g"])
    by_answer = mine([question], "retrieved", [lambda i: docs], progress=False)[0]
    assert by_answer.positive_ids == ["a#0"] and by_answer.negative_ids == ["g#1", "n#0"] and by_answer.gold is None
    settings = ReaderMiningSettings(positives_by="gold-document")
    by_gold = mine([question], "retrieved", [lambda i: docs], settings, progress=False)[0]
    assert by_gold.positive_ids == ["g#1", "a#0"] and by_gold.negative_ids == ["n#0"]
    assert by_gold.gold == gold  # found in the pool: a positive though it lacks the answer string
    one = ReaderMiningSettings(positives_by="gold-document", positives=1)
    assert mine([question], "retrieved", [lambda i: docs], one, progress=False)[0].positive_ids == ["g#1"]
    squad = mine([question], "gold", [lambda i: docs], settings, progress=False)[0]
    assert squad.positive_ids == [] and squad.negative_ids == ["n#0"]
    # A gold paragraph not found in the pool: answer matching as before.
    unfound = mine([replace(question, gold_ids=[])], "retrieved", [lambda i: docs], settings, progress=False)[0]
    assert unfound == by_answer


def test_gold_document_mining_looks_up_the_pool_and_has_its_own_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from training.reader import train_reader as cli

    monkeypatch.setenv("DPR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DPR_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "data" / "wiki").mkdir(parents=True)
    pool_document = {"id": "g", "title": "T", "text": "The tower  stands\nin Paris."}  # other whitespace
    (tmp_path / "data" / "wiki" / "documents.jsonl").write_text(json.dumps(pool_document) + "\n")
    path = tmp_path / "data" / "nq-train.jsonl"
    context = {"title": "T", "text": "The tower stands in Paris."}
    question = {"id": "q", "question": "where is the tower", "answers": ["Paris"], "positive_ctxs": [context]}
    path.write_text(json.dumps(question) + "\n")
    docs = [
        Document(id="g#1", content="It was finished in 1889.", meta={"document_id": "g"}),
        Document(id="n#0", content="Filler about rivers.", meta={"document_id": "n"}),
    ]
    store = SimpleNamespace(bm25_retrieval=lambda query, depth: docs)

    def mined(positives_by: str) -> list[MinedQuestion]:
        settings = ReaderMiningSettings(positives_by=positives_by)  # type: ignore[arg-type]
        return cli.mined_questions(path, store, tmp_path / "store", ["bm25"], settings, None, "enc", False)

    assert [(q.positive_ids, q.negative_ids) for q in mined("answer")] == [([], ["g#1", "n#0"])]
    assert [(q.positive_ids, q.negative_ids) for q in mined("gold-document")] == [(["g#1"], ["n#0"])]
    # Answer matching keeps the cache key it had before --positives-by, so earlier caches are reused.
    old_settings = {"depth": 50, "negatives": 30, "positives": 3, "top": 20}
    old = [str(path.resolve()), path.stat().st_size, str((tmp_path / "store").resolve()), ["bm25"], old_settings]
    key = json.dumps([*old, None, "enc", False, None, 0], sort_keys=True)
    files = sorted(p.name for p in (tmp_path / "cache" / "reader_data").iterdir())
    assert len(files) == 2 and f"nq-train-{hashlib.sha256(key.encode()).hexdigest()[:12]}.jsonl" in files


def test_selection_groups_take_a_positive_without_answer_spans(tokenizer) -> None:
    lookup = PassageLookup(DictStore(PASSAGES))
    missing = MinedQuestion("x", "q", ["Atlantis"], "gold", Passage("T", "No answer here."), negative_ids=["n0", "n1"])
    assert build_group(missing, lookup, tokenizer, 3, SETTINGS, np.random.default_rng(0)) is None
    group = build_group(missing, lookup, tokenizer, 3, SETTINGS, np.random.default_rng(0), with_spans=False)
    assert group is not None and group.spans == [] and len(group.rows) == 3
    assert "no answer here" in tokenizer.decode(group.rows[0].input_ids)
    batch = collate_groups([group], 3, tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id)
    assert batch["row_mask"].tolist() == [[True] * 3] and batch["span_mask"].shape == (1, 0)


def test_training_group_points_at_every_answer_occurrence(tokenizer) -> None:
    question = mined_questions()[0]
    lookup = PassageLookup(DictStore(PASSAGES))
    group = build_group(question, lookup, tokenizer, 4, SETTINGS, np.random.default_rng(0))
    assert group is not None and len(group.rows) == 4
    positive = group.rows[0]
    words = [tokenizer.decode(positive.input_ids[s : e + 1]) for s, e in group.spans]
    assert words == ["paris", "paris"]  # both occurrences, marginalised by the loss
    batch = collate_groups([group, group], 5, tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id)
    assert batch["input_ids"].shape[0] == 10 and batch["row_mask"].tolist() == [[True] * 4 + [False]] * 2
    missing = MinedQuestion("x", "q", ["Atlantis"], "gold", Passage("T", "No answer here."), negative_ids=["n0"])
    assert build_group(missing, lookup, tokenizer, 4, SETTINGS, np.random.default_rng(0)) is None


# ---- training and resuming -----------------------------------------------------------------------


def _stop_at(step: int, error: type[BaseException]):
    def after_step(done: int) -> None:
        if done == step:
            raise error("stop")

    return after_step


def test_training_runs_logs_and_exports(tmp_path: Path, tiny_encoder_dir: Path) -> None:
    result = train_reader(tmp_path / "run", tiny_encoder_dir)
    assert result.state.step == result.total_steps == 6
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    train_entries = [e for e in log if "loss" in e]
    assert [e["step"] for e in train_entries] == [1, 2, 3, 4, 5, 6]
    assert all(e["questions_per_s"] > 0 and e["peak_rss_mb"] > 0 for e in train_entries)
    assert [e["step"] for e in log if "dev_em" in e] == [2, 4, 6]
    with safe_open(str(result.export_dir / "model.safetensors"), "pt") as weights:
        assert all(weights.get_tensor(k).dtype == torch.float16 for k in weights.keys())  # noqa: SIM118 - not a mapping
    info = json.loads((result.export_dir / "reader_info.json").read_text())
    assert info["step"] == result.state.best_step
    reader, _ = load_reader(result.export_dir)
    assert reader is not None
    # Running the finished command again changes nothing.
    again = train_reader(tmp_path / "run", tiny_encoder_dir)
    assert again.state == result.state


def test_selection_objective_trains_the_selection_head_alone(
    tmp_path: Path, tiny_encoder_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Half the answers are in no passage: the reader objective has no span to learn from there, selection needs none.
    questions = [*mined_questions()[:3], *(replace(q, answers=["Atlantis"]) for q in mined_questions()[3:])]
    config = reader_config(tmp_path / "run", tiny_encoder_dir, objective="selection")
    result = train(config, questions, [], PassageLookup(DictStore(PASSAGES)))
    assert result.state.step == result.total_steps == 6
    entries = [e for e in read_log(tmp_path / "run" / "log.jsonl") if "loss" in e]
    assert [round(e["questions_per_s"] / e["steps_per_s"]) for e in entries] == [2] * 6  # no question dropped
    assert all(e["span_loss"] == 0 and e["loss"] == pytest.approx(e["selection_loss"]) for e in entries)
    assert reader_state(tmp_path / "run")["config"]["objective"] == "selection"
    info = json.loads((result.export_dir / "reader_info.json").read_text())
    assert info["training"]["objective"] == "selection"
    fresh = reader_from_encoder(str(tiny_encoder_dir), seed=0)[0].state_dict()
    exported = load_reader(result.export_dir)[0].state_dict()
    span_head = [k for k in fresh if "qa_outputs" in k]
    selection_head = [k for k in fresh if "qa_classifier" in k]
    assert span_head and all(torch.equal(exported[k], fresh[k].half().float()) for k in span_head)
    assert not all(torch.equal(exported[k], fresh[k].half().float()) for k in selection_head)
    with caplog.at_level(logging.WARNING):
        SpanReader(model=str(result.export_dir), precision="fp32").warm_up()
    assert "passage selection only" in caplog.text
    with pytest.raises(ValueError, match="objective"):  # a run is resumed with its own objective only
        train(reader_config(tmp_path / "run", tiny_encoder_dir), questions, [], PassageLookup(DictStore(PASSAGES)))


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_interrupted_training_resumes_to_the_same_state(
    tmp_path: Path, tiny_encoder_dir: Path, error: type[BaseException]
) -> None:
    train_reader(tmp_path / "straight", tiny_encoder_dir)
    # KeyboardInterrupt saves a checkpoint at step 3; a crash resumes from the step-2 checkpoint.
    with pytest.raises(error):
        train_reader(tmp_path / "broken", tiny_encoder_dir, after_step=_stop_at(3, error))
    assert reader_state(tmp_path / "broken")["position"]["step"] == (3 if error is KeyboardInterrupt else 2)
    train_reader(tmp_path / "broken", tiny_encoder_dir)
    assert_same_state(reader_state(tmp_path / "straight"), reader_state(tmp_path / "broken"))
    steps = [
        json.loads(line)["step"]
        for line in (tmp_path / "broken" / "log.jsonl").read_text().splitlines()
        if "loss" in json.loads(line)
    ]
    assert steps == [1, 2, 3, 4, 5, 6]  # steps run again after a crash are not logged twice


def test_finished_run_re_exports_its_last_step_on_request(tmp_path: Path, tiny_encoder_dir: Path) -> None:
    best = train_reader(tmp_path / "run", tiny_encoder_dir)
    last = train_reader(tmp_path / "run", tiny_encoder_dir, export="last")  # same run, finished: only re-exported
    assert last.state == best.state
    info = json.loads((last.export_dir / "reader_info.json").read_text())
    logged = [e for e in read_log(tmp_path / "run" / "log.jsonl") if e.get("step") == 6 and "dev_em" in e]
    assert info["step"] == 6 and info["exported"] == "last" and info["dev_em"] == logged[-1]["dev_em"]
    final = reader_state(tmp_path / "run")["model"]
    with safe_open(str(last.export_dir / "model.safetensors"), "pt") as weights:
        for name in weights.keys():  # noqa: SIM118 - safe_open's handle is not a mapping
            assert torch.equal(weights.get_tensor(name), final[name].to(torch.float16)), name
    with pytest.raises(ValueError, match="export"):
        reader_config(tmp_path / "x", tiny_encoder_dir, export="first")


def test_resume_with_other_settings_is_refused(tmp_path: Path, tiny_encoder_dir: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        train_reader(tmp_path / "run", tiny_encoder_dir, after_step=_stop_at(1, KeyboardInterrupt))
    with pytest.raises(ValueError, match="learning_rate"):
        train_reader(tmp_path / "run", tiny_encoder_dir, learning_rate=5e-4)


def test_training_goes_on_from_a_trained_reader(tmp_path: Path, tiny_encoder_dir: Path) -> None:
    from dpr_components.reader_training.model import reader_to_train
    from dpr_components.readers.model import is_reader_folder

    first = train_reader(tmp_path / "first", tiny_encoder_dir)
    assert is_reader_folder(first.export_dir) and not is_reader_folder(tiny_encoder_dir)
    started, _ = reader_to_train(str(first.export_dir))
    exported, _ = load_reader(first.export_dir)
    assert started.training
    for (name, a), b in zip(started.state_dict().items(), exported.state_dict().values(), strict=True):
        assert torch.equal(a, b), name  # the trained heads are kept, not drawn afresh
    second = train_reader(tmp_path / "second", tiny_encoder_dir, init_model=str(first.export_dir))
    assert second.state.step == second.total_steps


@pytest.mark.parametrize(
    ("model", "is_reader"),
    [("bundled:reader-minilm", True), ("bundled:all-MiniLM-L6-v2", False), ("bundled:no-such-model", False)],
)
def test_bundled_readers_are_reader_folders(model: str, is_reader: bool) -> None:
    """Training from ``bundled:reader-minilm`` goes on with its trained heads, not fresh ones."""
    from dpr_components.readers.model import is_reader_folder

    assert is_reader_folder(model) is is_reader


def _train_reader_until(
    stop: BaseException,
    arguments: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mined: Callable[..., list[Any]] = lambda *args, **kwargs: [],
) -> tuple[int, list[ReaderTrainingSettings]]:
    """``train_reader``'s command on squad/train.jsonl mined with bm25 into ``tmp_path/run``, with
    ``arguments``, no store opened, ``mined`` for the mined questions and training stopped by ``stop`` at
    once: its exit code and the settings it started training with."""
    from training.reader import train_reader as cli

    monkeypatch.setattr(cli, "_store", lambda path, encoder: None)
    monkeypatch.setattr(cli, "mined_questions", mined)
    trained: list[ReaderTrainingSettings] = []

    def stopped_train(config: ReaderTrainingSettings, *rest: object) -> None:
        trained.append(config)
        raise stop

    monkeypatch.setattr(cli, "train", stopped_train)
    fixed = ["--output", str(tmp_path / "run"), "--train", "squad/train.jsonl", "--negatives-from", "bm25"]
    return cli.main([*fixed, *arguments]), trained


@pytest.mark.parametrize(("flags", "expected_draw_seed"), [([], 3), (["--data-seed", "0"], 0)])
def test_train_reader_draws_questions_with_the_data_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], expected_draw_seed: int
) -> None:
    """--data-seed keeps the training sample (and its mining cache) and the dev draw while --seed changes the order."""
    draws: list[int] = []

    def mined(*args: Any, **kwargs: Any) -> list[Any]:
        draws.append(args[-1])  # the seed of the draw
        return []

    arguments = ["--sample", "10", "--seed", "3", *flags]
    code, trained = _train_reader_until(KeyboardInterrupt(), arguments, tmp_path, monkeypatch, mined=mined)
    assert code == 130
    assert draws == [expected_draw_seed, expected_draw_seed]  # training file, dev file
    assert trained[0].seed == 3


def test_train_reader_passes_the_skip_budget_and_reports_errors_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dpr_components.runs.finite import TrainingDiverged

    diverged = TrainingDiverged("training stopped at step 3: the loss is nan")
    code, trained = _train_reader_until(diverged, ["--dev", "", "--skip-nonfinite-steps", "4"], tmp_path, monkeypatch)
    assert code == 2 and trained[0].max_nonfinite_steps == 4
    assert capsys.readouterr().err == "error: training stopped at step 3: the loss is nan\n"
    with pytest.raises(ValueError, match="max_nonfinite_steps"):
        reader_config(tmp_path / "x", tmp_path, max_nonfinite_steps=-1)


def test_max_length_beyond_the_encoder_positions_is_refused(tmp_path: Path, tiny_bert_dir: Path) -> None:
    with pytest.raises(
        ValueError, match=r"reader training setting 'max_length' \(for .*\) is 192, more than the model's 128 positions"
    ):
        train(
            reader_config(tmp_path / "run", tiny_bert_dir, max_length=192),
            mined_questions(),
            [],
            PassageLookup(DictStore(PASSAGES)),
        )
