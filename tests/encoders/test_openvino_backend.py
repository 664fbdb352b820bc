"""The ``openvino`` back end of passage encoding: same vectors as torch, clear errors, settings kept."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.model_layout import EncoderLoadError
from dpr_components.encoders.text_encoder import TextEncoder
from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder
from tests.helpers.paths import REPO

pytest.importorskip("openvino")

TEXTS = ["Hamlet is a tragedy by William Shakespeare.", "Paris is the capital of France.", "short"]
TITLES: list[str | None] = ["Hamlet", "Paris", None]


def _vectors(model: str, backend: str, pooling: str = "auto", precision: str = "fp32") -> np.ndarray:
    settings = EncoderSettings(model=model, pooling=pooling, precision=precision, backend=backend)  # type: ignore[arg-type]
    return TextEncoder(settings, batch_size=2).encode_passages(TEXTS, TITLES)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_openvino_fp32_matches_torch_fp32(tiny_bert_dir: Path, pooling: str) -> None:
    torch_vectors = _vectors(str(tiny_bert_dir), "torch", pooling)
    openvino_vectors = _vectors(str(tiny_bert_dir), "openvino", pooling)
    np.testing.assert_allclose(openvino_vectors, torch_vectors, atol=1e-4)


def test_openvino_vectors_are_cached_apart_from_torch(tiny_bert_dir: Path) -> None:
    fingerprints = {
        backend: TextEncoder(EncoderSettings(model=str(tiny_bert_dir), backend=backend)).fingerprint()  # type: ignore[arg-type]
        for backend in ("torch", "openvino")
    }
    assert fingerprints["torch"] != fingerprints["openvino"]
    # torch's fingerprint does not depend on the back-end setting's existence
    assert fingerprints["torch"] == TextEncoder(EncoderSettings(model=str(tiny_bert_dir))).fingerprint()


@pytest.mark.parametrize("side", [0, 1])
def test_openvino_runs_dpr_checkpoints_as_torch_does(tiny_dpr_dirs: tuple[Path, Path], side: int) -> None:
    """DPR's pooler output without a projection is the [CLS] vector: OpenVINO runs the inner BERT, pooled by cls."""
    folder = str(tiny_dpr_dirs[side])
    torch_vectors = _vectors(folder, "torch")
    openvino_vectors = _vectors(folder, "openvino")
    np.testing.assert_allclose(openvino_vectors, torch_vectors, atol=1e-4)
    assert not np.allclose(torch_vectors[0], torch_vectors[1])


def test_openvino_refuses_a_dpr_projection(tiny_projected_dpr_dir: Path) -> None:
    with pytest.raises(EncoderLoadError, match=r"without a projection layer.*use backend 'torch'"):
        TextEncoder(EncoderSettings(model=str(tiny_projected_dpr_dir), backend="openvino")).load()
    auto = TextEncoder(EncoderSettings(model=str(tiny_projected_dpr_dir), backend="auto"))
    assert auto.backend == "torch" and "projection" in auto.backend_choice().reason


def test_openvino_refuses_pooler_pooling(tiny_bert_dir: Path) -> None:
    with pytest.raises(EncoderLoadError, match="pooled by 'pooler' runs its pooler layer"):
        TextEncoder(EncoderSettings(model=str(tiny_bert_dir), pooling="pooler", backend="openvino")).load()


def test_unknown_backend_is_named() -> None:
    with pytest.raises(ValueError, match="backend must be auto, torch or openvino, got 'onnx'"):
        TextEncoder(EncoderSettings(backend="onnx"))  # type: ignore[arg-type]


def test_missing_openvino_says_how_to_install_it(tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openvino", None)
    monkeypatch.setattr(TextEncoder, "_shared", {})  # no model loaded by an earlier test
    with pytest.raises(ImportError, match=r"pip install 'openvino>=2025.1'"):
        TextEncoder(EncoderSettings(model=str(tiny_bert_dir), backend="openvino")).load()


def test_passage_embedder_round_trips_backend(tiny_bert_dir: Path) -> None:
    embedder = PassageEmbedder(model=str(tiny_bert_dir), backend="openvino", progress_bar=False)
    data = embedder.to_dict()
    assert data["init_parameters"]["backend"] == "openvino"
    restored = PassageEmbedder.from_dict(data)
    assert restored.encoder.settings.backend == "openvino"
    assert PassageEmbedder(model=str(tiny_bert_dir)).to_dict()["init_parameters"]["backend"] == "auto"


@pytest.mark.integration
def test_bundled_minilm_on_openvino_keeps_the_accuracy_bound() -> None:
    """The kept setting (precision auto: bf16 where the CPU has it) stays at cosine >= 0.999 to torch fp32."""
    with open(REPO / "examples" / "corpus.jsonl", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle][:48]
    texts, titles = [r["text"] for r in records], [r.get("title") for r in records]
    reference = TextEncoder(EncoderSettings(precision="fp32")).encode_passages(texts, titles)
    vectors = TextEncoder(EncoderSettings(precision="auto", backend="openvino")).encode_passages(texts, titles)
    cosine = (reference * vectors).sum(1)
    assert cosine.min() >= 0.999, cosine.min()
