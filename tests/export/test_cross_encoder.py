"""A passage ranker exported as a cross-encoder (``haystack export-ranker``): in Haystack's
``SentenceTransformersSimilarityRanker`` its scores map back to our ``PassageRanker``'s logits and order the
passages alike; the mapping is strictly increasing and close to the identity; the tokenizer forms our
rows; the command writes and refuses folders as the other exports do (docs/interop.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from haystack import Document

from dpr_components.cli.main import main
from dpr_components.export.cross_encoder import (
    CROSS_ENCODER,
    SCALE,
    TITLE_SEPARATOR,
    export_cross_encoder,
    logit_from_score,
)
from dpr_components.export.sentence_transformers import ExportError
from dpr_components.reader_training.model import reader_from_encoder
from dpr_components.readers.inputs import InputSettings
from dpr_components.readers.model import save_reader
from dpr_components.readers.predict import reader_input
from dpr_components.utils.output_folders import read_marker
from haystack_integrations.components.rankers.dpr.passage_ranker import PassageRanker
from tests.helpers.models import bundled_tokenizer, save_tiny_bert

pytestmark = pytest.mark.usefixtures("one_thread")

QUESTION = "who wrote hamlet"
DOCUMENTS = [
    Document(id="hamlet", content="Hamlet is a tragedy written by William Shakespeare.", meta={"title": "Hamlet"}),
    Document(id="everest", content="Mount Everest is the highest mountain above sea level.", meta={"title": "Everest"}),
    Document(id="curie", content="Marie Curie won two Nobel prizes.", meta={"title": "Marie Curie"}),
    Document(id="paris", content="Paris is the capital of France.", meta={"title": ""}),  # an empty title
    Document(id="bees", content="Honey bees make honey from nectar.", meta={"title": "Honey bee"}),
]


@pytest.fixture(scope="module")
def ranker_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random reader whose selection head is scaled up, so its logits spread over several units."""
    encoder = save_tiny_bert(tmp_path_factory.mktemp("ranker_encoder"), bundled_tokenizer(), seed=11)
    reader, tokenizer = reader_from_encoder(str(encoder), seed=12)
    with torch.no_grad():
        reader.span_predictor.qa_classifier.weight.mul_(200.0)
    path = tmp_path_factory.mktemp("ranker") / "ranker"
    save_reader(reader, tokenizer, path)
    return path


@pytest.fixture(scope="module")
def exported(ranker_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_cross_encoder(ranker_dir, tmp_path_factory.mktemp("cross") / "cross", max_length=96)


def _similarity_ranker(folder: Path):
    rankers = pytest.importorskip("haystack_integrations.components.rankers.sentence_transformers")
    ranker = rankers.SentenceTransformersSimilarityRanker(
        model=str(folder), top_k=len(DOCUMENTS), meta_fields_to_embed=["title"], embedding_separator=TITLE_SEPARATOR,
        scale_score=False,
    )  # fmt: skip
    ranker.warm_up()
    return ranker


def test_similarity_ranker_scores_map_to_our_logits(ranker_dir: Path, exported: Path) -> None:
    ours = PassageRanker(
        model=str(ranker_dir),
        top_k=len(DOCUMENTS),
        precision="fp32",
        max_length=96,
        stride=16,
        max_question_tokens=24,
        max_title_tokens=8,
    )
    ours_ranked = ours.run(query=QUESTION, documents=DOCUMENTS)["documents"]
    theirs = _similarity_ranker(exported).run(query=QUESTION, documents=DOCUMENTS)["documents"]
    logits = {d.id: d.score for d in ours_ranked}
    assert max(logits.values()) - min(logits.values()) > 0.05  # apart by far more than float rounding
    assert [d.id for d in theirs] == [d.id for d in ours_ranked]
    for document in theirs:
        assert logit_from_score(document.score) == pytest.approx(logits[document.id], abs=1e-4)
        assert document.score == pytest.approx(logits[document.id], rel=1e-3)  # the raw score is nearly the logit


def test_the_mapping_is_increasing_and_close_to_the_identity() -> None:
    logits = np.linspace(-50, 50, 1001)
    scores = np.tanh(SCALE * logits) / SCALE
    assert (np.diff(scores) > 0).all()
    assert np.abs(scores - logits).max() <= 1e-3 * 50
    assert all(
        math.isclose(logit_from_score(s), x, abs_tol=1e-9) for s, x in zip(scores[::50], logits[::50], strict=True)
    )


def test_exported_tokenizer_forms_our_rows(ranker_dir: Path, exported: Path) -> None:
    from transformers import AutoTokenizer

    theirs = AutoTokenizer.from_pretrained(str(exported))
    ours = bundled_tokenizer()
    for document in DOCUMENTS:
        title = document.meta["title"]
        row = reader_input(ours, QUESTION, [(title or None, document.content)], InputSettings(96, 16, 24, 8)).rows[0]
        encoded = theirs(QUESTION, TITLE_SEPARATOR.join([title, document.content]))
        assert encoded["input_ids"] == row.input_ids
        assert set(encoded.get("token_type_ids", [0])) == {0}
    config = json.loads((exported / "config.json").read_text(encoding="utf-8"))
    assert config["architectures"] == ["BertForSequenceClassification"] and len(config["id2label"]) == 1
    assert theirs.model_max_length == 96 and read_marker(exported) == CROSS_ENCODER


def test_export_ranker_command(ranker_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cross"
    assert main(["export-ranker", str(ranker_dir), str(out), "--max-length", "64"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert main(["export-ranker", str(ranker_dir), str(out), "--max-length", "64"]) == 0  # its own earlier export
    assert main(["export-ranker", str(ranker_dir), str(ranker_dir / "inside")]) == 2
    assert "inside this command's input" in capsys.readouterr().err
    assert main(["export-ranker", str(ranker_dir), str(tmp_path / "long"), "--max-length", "100000"]) == 2
    assert "max_length must be a whole number from 8 to the reader's 128 positions" in capsys.readouterr().err
    with pytest.raises(ExportError, match="max_length"):
        export_cross_encoder(ranker_dir, tmp_path / "bool", max_length=True)  # type: ignore[arg-type]
