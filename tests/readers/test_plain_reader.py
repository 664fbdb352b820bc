"""Reading in plain torch (dpr_components.readers.plain_reader) against transformers' DPRReader: logits,
the selection logit, the tokenizer's ids, offsets and word ids, the answers, and the fall-backs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from haystack import Document

from dpr_components.readers.inputs import InputSettings, build_rows, collate, tokenize_passage
from dpr_components.readers.model import load_reader, reader_logits, shared_reader
from dpr_components.readers.plain_reader import PlainReader, ReaderTokenizer, load_plain_reader
from dpr_components.readers.selection import selection_logits
from haystack_integrations.components.readers.dpr.span_reader import SpanReader
from tests.helpers.paths import REPO

TEXTS = [
    "Hamlet is a tragedy written by William Shakespeare around 1600.",
    "",
    "Qui a écrit « Les Misérables » ? naïve café 東京 😀 ǅ ß ﬁ",
    "[MASK] is the [cls] capital of [SEP] france?",
    "  spaces\tand\nnewlines\u200b and control \x07 characters  ",
    "unbelievably long-winded, hyphenated co-operation 1,234.5 km² (e.g. U.S.A.)",
    "truncated " * 80,
]
QUESTION = "who wrote hamlet"


def _batch(tokenizer: object, texts: list[str]) -> dict[str, torch.Tensor]:
    """Rows of the question with every non-empty text, padded to one length (so most rows are padded)."""
    passages = [("Title", tokenize_passage(tokenizer, t)) for t in texts if t.strip()]
    rows = build_rows(
        tokenizer,
        QUESTION,
        passages,
        InputSettings(max_length=64, stride=16, max_question_tokens=8, max_title_tokens=4),
    )
    return collate(rows, tokenizer.pad_token_id)  # type: ignore[attr-defined]


def _logits(reader: object, batch: dict[str, torch.Tensor], bf16: bool) -> tuple[torch.Tensor, ...]:
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        return reader_logits(reader, batch["input_ids"], batch["attention_mask"])  # type: ignore[arg-type]


@pytest.mark.parametrize("bf16", [False, True])
def test_tiny_reader_logits_equal_transformers(tiny_reader_dir: Path, bf16: bool) -> None:
    ours, tokenizer = shared_reader(str(tiny_reader_dir), bf16_linear=bf16)
    theirs, _ = shared_reader(str(tiny_reader_dir), bf16_linear=bf16, plain=False)
    assert isinstance(ours, PlainReader) and isinstance(theirs, torch.nn.Module)
    batch = _batch(tokenizer, TEXTS)
    assert bool((batch["attention_mask"] == 0).any())  # padded rows are part of the check
    for mine, reference in zip(_logits(ours, batch, bf16), _logits(theirs, batch, bf16), strict=True):
        torch.testing.assert_close(mine, reference, atol=1e-5 if not bf16 else 1e-2, rtol=0)


def test_selection_logit_equals_the_full_forward(tiny_reader_dir: Path) -> None:
    ours, tokenizer = shared_reader(str(tiny_reader_dir))
    theirs, _ = shared_reader(str(tiny_reader_dir), plain=False)
    batch = _batch(tokenizer, TEXTS)
    with torch.no_grad():
        first_token_only = selection_logits(ours, batch["input_ids"], batch["attention_mask"])
        reference = selection_logits(theirs, batch["input_ids"], batch["attention_mask"])
    full = _logits(ours, batch, False)[2]
    torch.testing.assert_close(first_token_only, reference, atol=1e-5, rtol=0)
    torch.testing.assert_close(first_token_only, full, atol=1e-5, rtol=0)


@pytest.mark.parametrize("folder", ["tiny", "bundled"])
def test_tokenizer_equals_transformers(tiny_reader_dir: Path, folder: str) -> None:
    from transformers import AutoTokenizer

    from dpr_components.readers.model import resolve_reader_path

    path = tiny_reader_dir if folder == "tiny" else resolve_reader_path("bundled:reader-minilm")
    loaded = load_plain_reader(path)
    assert loaded is not None
    ours, theirs = loaded[1], AutoTokenizer.from_pretrained(str(path))
    assert isinstance(ours, ReaderTokenizer) and len(ours) == len(theirs)
    assert (ours.cls_token_id, ours.sep_token_id, ours.pad_token_id) == (
        theirs.cls_token_id,
        theirs.sep_token_id,
        theirs.pad_token_id,
    )
    for text in TEXTS:
        mine = tokenize_passage(ours, text)
        reference = tokenize_passage(theirs, text)
        assert (mine.ids, mine.offsets, mine.word_ids) == (reference.ids, reference.offsets, reference.word_ids), text


def test_span_reader_answers_as_with_transformers(tiny_reader_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    documents = [Document(content=t, meta={"title": "T"}) for t in TEXTS]
    plain = SpanReader(model=str(tiny_reader_dir), top_k=5)
    plain.warm_up()
    assert isinstance(plain._reader, PlainReader)
    from dpr_components.readers import reading_component

    monkeypatch.setattr(
        reading_component, "shared_reader", lambda model, bf16_linear: shared_reader(model, bf16_linear, plain=False)
    )
    reference = SpanReader(model=str(tiny_reader_dir), top_k=5)
    reference.warm_up()
    assert isinstance(reference._reader, torch.nn.Module)
    ours, theirs = plain.run(QUESTION, documents)["answers"], reference.run(QUESTION, documents)["answers"]
    assert [(a.data, a.document.id if a.document else None) for a in ours] == [
        (a.data, a.document.id if a.document else None) for a in theirs
    ]
    assert [a.score for a in ours] == pytest.approx([a.score for a in theirs], abs=1e-5)


def _copy(folder: Path, target: Path) -> Path:
    shutil.copytree(folder, target)
    return target


@pytest.mark.parametrize("change", [{"hidden_act": "gelu_new"}, {"projection_dim": 8}, {"model_type": "bert"}])
def test_unsupported_readers_load_with_transformers(tiny_reader_dir: Path, tmp_path: Path, change: dict) -> None:
    folder = _copy(tiny_reader_dir, tmp_path / "reader")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    assert load_plain_reader(folder) is None
    if "hidden_act" in change:  # the others make transformers build another model; the refusal is the point
        reader, _ = load_reader(folder, plain=True)
        assert isinstance(reader, torch.nn.Module)


def test_missing_head_falls_back(tiny_reader_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    folder = _copy(tiny_reader_dir, tmp_path / "reader")
    weights = load_file(str(folder / "model.safetensors"))
    weights["span_predictor.qa_classifier.weight"] = weights["span_predictor.qa_classifier.weight"][:, :4]
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    assert load_plain_reader(folder) is None


def test_cold_qa_run_does_not_import_transformers(tiny_reader_dir: Path) -> None:
    """Reading with the plain reader imports no transformers model code (what makes a cold start fast)."""
    code = (
        "import sys\n"
        "from haystack import Document\n"
        "from haystack_integrations.components.readers.dpr.span_reader import SpanReader\n"
        f"reader = SpanReader(model={str(tiny_reader_dir)!r}, top_k=2)\n"
        "reader.warm_up()\n"
        "reader.run('who wrote hamlet', [Document(content='Hamlet was written by Shakespeare.')])\n"
        "print(sorted(m for m in sys.modules if m.startswith('transformers')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
