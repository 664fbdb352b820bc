"""Trained checkpoints in Hugging Face DPR layout load in TextEncoder and the Haystack
components with the training model's vectors; conversions keep pooling and normalisation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from haystack import Document

from dpr_components.dpr_data.examples import Ctx, TrainingExample
from dpr_components.encoder_training.export import export_bi_encoder
from dpr_components.encoder_training.model import BiEncoder
from dpr_components.encoder_training.settings import EncoderTrainingSettings
from dpr_components.encoder_training.train import train
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.model_layout import detect_layout
from dpr_components.encoders.text_encoder import TextEncoder
from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder

QUESTIONS = ["who wrote hamlet", "what is the highest mountain on earth and how high is it"]
PASSAGES = [
    Ctx("Hamlet", "Hamlet is a tragedy by William Shakespeare."),
    Ctx("", "Everest is 8,849 metres high."),
    Ctx("Mount Everest", "The highest mountain above sea level, in the Himalayas. " * 3),
]
EXAMPLES = [
    TrainingExample(
        f"question {i} on topic {i}",
        [f"a{i}"],
        [Ctx(f"T{i}", f"passage {i} with a{i}")],
        hard_negatives=[Ctx("H", f"hard {i}")],
        id=str(i),
    )
    for i in range(8)
]


def _vectors(model: BiEncoder) -> tuple[np.ndarray, np.ndarray]:
    model.eval()
    with torch.no_grad():
        return (
            model.encode_questions(model.tokenize_questions(QUESTIONS)).numpy(),
            model.encode_passages(model.tokenize_passages(PASSAGES)).numpy(),
        )


def _encoder_vectors(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    question = TextEncoder(EncoderSettings(model=str(folder / "question_encoder"), precision="fp32"))
    passage = TextEncoder(EncoderSettings(model=str(folder / "passage_encoder"), precision="fp32"))
    return (
        question.encode_questions(QUESTIONS),
        passage.encode_passages([p.text for p in PASSAGES], [p.title or None for p in PASSAGES]),
    )


def test_trained_checkpoint_loads_with_the_training_vectors(tiny_st_dir: Path, tmp_path: Path) -> None:
    config = EncoderTrainingSettings(
        model=str(tiny_st_dir),
        batch_size=4,
        epochs=1,
        similarity="cosine",
        max_length=48,
        learning_rate=1e-3,
        threads=1,
    )
    result = train(config, EXAMPLES, tmp_path / "run", show_progress=False)
    final = Path(result.model_dir)
    assert result.model_dir == result.final_dir and result.steps == 2
    assert detect_layout(final / "question_encoder").kind == "dpr_question"
    assert detect_layout(final / "passage_encoder").kind == "dpr_context"
    sidecar = json.loads((final / "question_encoder" / "encoder_config.json").read_text())
    assert sidecar["pooling"] == "mean" and sidecar["normalize"] is True and sidecar["max_length"] == 48

    trained = BiEncoder.from_pretrained(str(tiny_st_dir), normalize=True, max_length=48)
    trained.load_state_dict(torch.load(tmp_path / "run" / "checkpoints" / "step-00000002" / "model.pt"))
    questions, passages = _vectors(trained)
    loaded_questions, loaded_passages = _encoder_vectors(final)
    np.testing.assert_allclose(loaded_questions, questions, atol=1e-5)
    np.testing.assert_allclose(loaded_passages, passages, atol=1e-5)
    untrained_questions, _ = _vectors(BiEncoder.from_pretrained(str(tiny_st_dir), normalize=True, max_length=48))
    assert not np.allclose(untrained_questions, questions, atol=1e-4)

    embedder = PassageEmbedder(model=str(final / "passage_encoder"), precision="fp32", progress_bar=False)
    documents = [Document(content=p.text, meta={"title": p.title} if p.title else {}) for p in PASSAGES]
    embedded = embedder.run(documents)["documents"]
    np.testing.assert_allclose(np.array([d.embedding for d in embedded]), passages, atol=1e-5)


def test_fp16_export_is_half_the_size_and_loads_as_float32(tiny_dpr_dirs: tuple[Path, Path], tmp_path: Path) -> None:
    question_dir, context_dir = tiny_dpr_dirs
    model = BiEncoder.from_pretrained(str(question_dir), passage_model=str(context_dir), max_length=64)
    assert model.pooling == "pooler" and model.normalize is False
    full, half = export_bi_encoder(model, tmp_path / "fp32"), export_bi_encoder(model, tmp_path / "fp16", fp16=True)
    size = lambda folder: (folder / "question_encoder" / "model.safetensors").stat().st_size  # noqa: E731
    assert size(half) < 0.6 * size(full)
    encoder = TextEncoder(EncoderSettings(model=str(half / "question_encoder"), precision="fp32"))
    encoder.load()
    assert encoder._model.dtype == torch.float32
    np.testing.assert_allclose(_encoder_vectors(half)[0], _encoder_vectors(full)[0], atol=2e-2)


def test_tied_encoders_export_both_roles(tiny_bert_dir: Path, tmp_path: Path) -> None:
    model = BiEncoder.from_pretrained(str(tiny_bert_dir), tie=True, max_length=64)
    assert model.passage_model is None and len(list(model.parameters())) == len(list(model.question_model.parameters()))
    out = export_bi_encoder(model, tmp_path / "tied")
    questions, passages = _vectors(model)
    loaded_questions, loaded_passages = _encoder_vectors(out)
    np.testing.assert_allclose(loaded_questions, questions, atol=1e-5)
    np.testing.assert_allclose(loaded_passages, passages, atol=1e-5)


def test_conversions_round_trip(tiny_st_dir: Path, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from training.retriever.convert import main as convert

    original = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32")).encode_questions(QUESTIONS)
    assert convert(["to-dpr", str(tiny_st_dir), str(tmp_path / "dpr")]) == 0
    dpr_question = tmp_path / "dpr" / "question_encoder"
    as_dpr = TextEncoder(EncoderSettings(model=str(dpr_question), precision="fp32"))
    np.testing.assert_allclose(as_dpr.encode_questions(QUESTIONS), original, atol=1e-5)
    assert as_dpr.pooling == "mean" and as_dpr.normalize

    assert convert(["to-st", str(dpr_question), str(tmp_path / "st")]) == 0
    st = SentenceTransformer(str(tmp_path / "st"), device="cpu").encode(QUESTIONS)
    np.testing.assert_allclose(st, original, atol=1e-5)

    assert convert(["to-bert", str(dpr_question), str(tmp_path / "bert")]) == 0
    bert = TextEncoder(EncoderSettings(model=str(tmp_path / "bert"), precision="fp32"))
    assert bert.layout.kind == "hf" and bert.pooling == "mean" and bert.normalize
    np.testing.assert_allclose(bert.encode_questions(QUESTIONS), original, atol=1e-5)

    assert convert(["to-st", str(tmp_path / "missing"), str(tmp_path / "x")]) == 2


def test_dpr_layout_needs_a_bert_encoder(tmp_path: Path) -> None:
    from transformers import DistilBertConfig, DistilBertModel

    from dpr_components.encoder_training.dpr_layout import bert_to_dpr

    model = DistilBertModel(DistilBertConfig(vocab_size=50, dim=16, n_layers=1, n_heads=2, hidden_dim=20))
    with pytest.raises(ValueError, match="holds BERT encoders"):
        bert_to_dpr(model, "question")


def test_max_length_beyond_the_model_positions_is_refused(tiny_bert_dir: Path) -> None:
    with pytest.raises(
        ValueError, match=r"training setting 'max_length' \(for .*\) is 256, more than the model's 128 positions"
    ):
        BiEncoder.from_pretrained(str(tiny_bert_dir), max_length=256)
    assert BiEncoder.from_pretrained(str(tiny_bert_dir)).max_length == 128  # unset: DPR's 256, cut to the model's
