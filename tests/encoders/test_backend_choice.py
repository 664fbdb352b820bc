"""``backend="auto"``: OpenVINO for passages when it passes the accuracy bound, torch otherwise; once per process."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dpr_components.cli.main import main
from dpr_components.encoders import backend_choice, text_encoder
from dpr_components.encoders.backend_choice import (
    ENV_VARIABLE,
    BackendChoice,
    env_backend,
    forget_choices,
    lowest_cosine,
)
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.text_encoder import TextEncoder
from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder
from haystack_integrations.components.embedders.dpr.question_embedder import QuestionEmbedder
from tests.helpers.commands import index_args

pytest.importorskip("openvino")
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def fresh_choices(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(ENV_VARIABLE, raising=False)
    forget_choices()
    yield
    forget_choices()


def _auto(model: Path, **settings: object) -> EncoderSettings:
    return EncoderSettings(model=str(model), backend="auto", **settings)  # type: ignore[arg-type]


def _passage_choice(settings: EncoderSettings) -> BackendChoice:
    return TextEncoder(settings).backend_choice()


def test_auto_runs_passages_on_openvino_and_says_so(tiny_bert_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=backend_choice.__name__):
        encoder = TextEncoder(_auto(tiny_bert_dir))
        assert encoder.backend == "openvino"
        TextEncoder(_auto(tiny_bert_dir)).load()
    lines = [r.getMessage() for r in caplog.records if r.name == backend_choice.__name__]
    assert len(lines) == 1  # decided once per process
    assert "backend auto runs on openvino" in lines[0] and "cosine" in lines[0] and ENV_VARIABLE in lines[0]


def test_auto_makes_openvinos_vectors_and_cache_key(tiny_bert_dir: Path) -> None:
    auto = TextEncoder(_auto(tiny_bert_dir))
    explicit = TextEncoder(EncoderSettings(model=str(tiny_bert_dir), backend="openvino"))
    on_torch = TextEncoder(EncoderSettings(model=str(tiny_bert_dir), backend="torch"))
    assert auto.fingerprint() == explicit.fingerprint() != on_torch.fingerprint()
    texts, titles = ["Hamlet is a tragedy.", "Paris is in France."], ["Hamlet", None]
    np.testing.assert_array_equal(auto.encode_passages(texts, titles), explicit.encode_passages(texts, titles))


def test_questions_stay_on_plain_torch(tiny_bert_dir: Path) -> None:
    embedder = QuestionEmbedder(model=str(tiny_bert_dir))
    embedder.warm_up()
    assert embedder.encoder.backend == "torch"
    assert embedder.to_dict()["init_parameters"]["backend"] == "auto"
    on_openvino = QuestionEmbedder(model=str(tiny_bert_dir), backend="openvino")
    assert on_openvino.encoder.backend == "openvino"
    np.testing.assert_allclose(
        on_openvino.run(text="who wrote hamlet?")["embedding"],
        embedder.run(text="who wrote hamlet?")["embedding"],
        atol=1e-2,
    )


@pytest.mark.parametrize(
    ("value", "expected"), [("torch", "torch"), ("OpenVINO", "openvino"), ("auto", None), ("", None)]
)
def test_environment_overrides_auto(value: str, expected: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VARIABLE, value)
    assert env_backend() == expected


def test_environment_choice_reaches_the_encoder(tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VARIABLE, "torch")
    assert TextEncoder(_auto(tiny_bert_dir)).backend == "torch"
    assert _passage_choice(_auto(tiny_bert_dir)).reason == f"{ENV_VARIABLE}=torch"


def test_environment_openvino_reaches_questions_but_not_checkpoints_it_cannot_run(
    tiny_bert_dir: Path, tiny_projected_dpr_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VARIABLE, "openvino")
    assert QuestionEmbedder(model=str(tiny_bert_dir)).encoder.backend == "openvino"
    projected = QuestionEmbedder(model=str(tiny_projected_dpr_dir))
    projected.warm_up()  # loads on torch instead of failing
    assert projected.encoder.backend == "torch" and "projection layer" in projected.encoder.backend_choice().reason


def test_explicit_backend_wins_over_the_environment(tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VARIABLE, "openvino")
    assert TextEncoder(EncoderSettings(model=str(tiny_bert_dir), backend="torch")).backend == "torch"


def test_a_wrong_environment_value_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VARIABLE, "onnx")
    with pytest.raises(ValueError, match="DPR_ENCODE_BACKEND must be auto, torch or openvino, got 'onnx'"):
        env_backend()


def test_openvino_failing_the_bound_is_refused_with_a_warning(
    tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(backend_choice, "COSINE_BOUND", 1.5)  # no cosine reaches it
    with caplog.at_level(logging.WARNING, logger=backend_choice.__name__):
        assert TextEncoder(_auto(tiny_bert_dir)).backend == "torch"
    assert "OpenVINO failed the accuracy bound here: cosine" in caplog.text


def test_probe_measures_openvino_against_torch_fp32(tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = EncoderSettings(model=str(tiny_bert_dir), backend="torch", precision="fp32")
    monkeypatch.setattr(TextEncoder, "_shared", {})
    cosine = text_encoder.openvino_probe_cosine(_auto(tiny_bert_dir, precision="fp32"))
    assert 0.9999 <= cosine <= 1.0 + 1e-6
    assert not TextEncoder.is_shared(reference)  # the fp32 reference is let go after the probe


def test_openvino_failing_to_convert_falls_back_to_torch(
    tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def fail(settings: EncoderSettings) -> float:
        raise RuntimeError("unsupported operation")

    monkeypatch.setattr(text_encoder, "openvino_probe_cosine", fail)
    assert TextEncoder(_auto(tiny_bert_dir)).backend == "torch"
    assert "OpenVINO failed on this model: RuntimeError: unsupported operation" in caplog.text


def test_without_openvino_auto_is_torch(tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend_choice, "openvino_installed", lambda: False)
    choice = _passage_choice(_auto(tiny_bert_dir))
    assert (choice.backend, choice.reason) == ("torch", "the openvino package is not installed")


def test_dpr_checkpoints_go_to_openvino_unless_they_project(
    tiny_dpr_dirs: tuple[Path, Path], tiny_projected_dpr_dir: Path
) -> None:
    _, passage_dir = tiny_dpr_dirs
    assert _passage_choice(_auto(passage_dir)).backend == "openvino"
    choice = _passage_choice(_auto(tiny_projected_dpr_dir))
    assert choice.backend == "torch" and "dpr_context checkpoint projects its [CLS] vector" in choice.reason


def test_pooler_pooling_stays_on_torch(tiny_bert_dir: Path) -> None:
    assert _passage_choice(_auto(tiny_bert_dir, pooling="pooler")).backend == "torch"


def test_passage_embedder_defaults_to_auto(tiny_bert_dir: Path) -> None:
    embedder = PassageEmbedder(model=str(tiny_bert_dir), progress_bar=False)
    assert embedder.encoder.settings.backend == "auto"
    assert PassageEmbedder.from_dict(embedder.to_dict()).encoder.settings.backend == "auto"


def test_lowest_cosine_is_the_worst_row() -> None:
    reference = np.array([[1.0, 0.0], [0.0, 2.0]])
    candidate = np.array([[1.0, 0.0], [1.0, 1.0]])
    assert lowest_cosine(candidate, reference) == pytest.approx(np.sqrt(0.5))


def test_haystack_run_index_says_which_back_end_encodes(
    small_corpus_file: Path, tiny_st_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert main(index_args(small_corpus_file, tmp_path / "store", tiny_st_dir)) == 0
    lines = [r.getMessage() for r in caplog.records if r.name == backend_choice.__name__]
    assert len(lines) == 1 and f"passage encoder {tiny_st_dir}: backend auto runs on openvino" in lines[0]
