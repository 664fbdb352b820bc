"""Distillation into the question encoder on a tiny model: one step from a tiny teacher file learns
from the store's own vectors, exports a question encoder paired with the passage encoder, resumes
from its checkpoint and refuses other settings in the same folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from dpr_components.dpr_data.teacher_file import TeacherRecord, read_teacher_file
from dpr_components.encoder_training.distillation import DistillationSettings, train_distillation
from dpr_components.encoder_training.distillation_batches import make_batch, store_vectors
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.pairing import read_pair_file
from dpr_components.encoders.text_encoder import TextEncoder
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

pytestmark = pytest.mark.usefixtures("one_thread")


def _teacher_file(store: Path, path: Path) -> Path:
    ids = sorted(d.id for d in EmbeddedDocumentStore(path=str(store)).filter_documents())[:3]
    records = [
        TeacherRecord(
            id=f"q{n}",
            question=question,
            answers=["x"],
            source="nq",
            passage_ids=ids,
            retrieval=[3.0, 2.0, 1.0],
            dense=[0.5, 0.4, 0.3],
            teacher=[0.0, 4.0 * (n + 1), -1.0],
            has_answer=[False, True, False],
            gold=[False, True, False],
        )
        for n, question in enumerate(["who wrote hamlet", "what is the capital of france"])
    ]
    path.write_text("".join(r.to_json() + "\n" for r in records), encoding="utf-8")
    return path


def test_batches_hold_the_store_vectors_and_in_batch_masks(indexed_store: Path, tmp_path: Path) -> None:
    records = read_teacher_file(_teacher_file(indexed_store, tmp_path / "t.jsonl"))
    table = store_vectors(indexed_store, records[0].passage_ids)
    batch = make_batch(records, table, retrieval_weight=0.5)
    stored = {d.id: d.embedding for d in EmbeddedDocumentStore(path=str(indexed_store)).filter_documents()}
    np.testing.assert_allclose(batch.vectors[0, 1].numpy(), stored[records[0].passage_ids[1]], rtol=1e-6)
    torch.testing.assert_close(batch.teacher[0], torch.tensor([1.5, 5.0, -0.5]))
    # both questions share the same candidates: another question's copies do not count twice
    assert batch.batch_mask[0].tolist() == [True, True, True, False, False, False]
    assert batch.batch_positives[1].tolist() == [False, False, False, False, True, False]


def test_one_step_learns_exports_and_resumes(indexed_store: Path, tiny_st_dir: Path, tmp_path: Path) -> None:
    settings = DistillationSettings(
        teacher_file=str(_teacher_file(indexed_store, tmp_path / "t.jsonl")),
        store=str(indexed_store),
        model=str(tiny_st_dir),
        passage_model=str(tiny_st_dir),
        contrastive_weight=0.5,
        batch_size=2,
        learning_rate=1e-2,
        warmup_ratio=0.0,
    )
    out = tmp_path / "run"
    exported = train_distillation(settings, out, show_progress=False)
    assert json.loads((out / "result.json").read_text())["steps"] == 1
    assert (out / "checkpoints" / "step-00000001" / "state.json").is_file()
    pair = read_pair_file(exported)
    assert pair is not None and pair["role"] == "question" and pair["passage_model"] == str(tiny_st_dir)
    before = TextEncoder(EncoderSettings(model=str(tiny_st_dir))).encode_questions(["who wrote hamlet"])
    after = TextEncoder(EncoderSettings(model=str(exported))).encode_questions(["who wrote hamlet"])
    assert not np.allclose(before, after)
    assert train_distillation(settings, out, show_progress=False) == exported  # resumed at its end: no new step
    assert json.loads((out / "result.json").read_text())["steps"] == 1
    with pytest.raises(ValueError, match="other settings"):
        train_distillation(DistillationSettings(**{**settings.__dict__, "student_temperature": 0.1}), out)
