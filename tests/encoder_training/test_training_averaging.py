"""Weight averaging ("model soup") of encoders fine-tuned from the same start."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from dpr_components.encoder_training.averaging import AveragingError, average_models
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.text_encoder import TextEncoder
from training.retriever.average import main as average_cli


def _perturbed_copy(source: Path, target: Path, seed: int) -> Path:
    """``source`` with every float tensor shifted by seeded noise (a stand-in for another fine-tuning run)."""
    shutil.copytree(source, target)
    generator = torch.Generator().manual_seed(seed)
    state = load_file(str(target / "model.safetensors"))
    for key, tensor in state.items():
        if tensor.is_floating_point():
            state[key] = tensor + 0.05 * torch.randn(tensor.shape, generator=generator)
    save_file(state, str(target / "model.safetensors"), metadata={"format": "pt"})
    return target


def _training_output(encoder: Path, target: Path) -> Path:
    for name in ("question_encoder", "passage_encoder"):
        shutil.copytree(encoder, target / name)
    return target


def test_uniform_average_is_the_mean_of_the_weights_and_loads(tiny_bert_dir: Path, tmp_path: Path) -> None:
    first = _perturbed_copy(tiny_bert_dir, tmp_path / "a", seed=1)
    second = _perturbed_copy(tiny_bert_dir, tmp_path / "b", seed=2)
    out = average_models([first, second], tmp_path / "soup")
    a, b, soup = (load_file(str(folder / "model.safetensors")) for folder in (first, second, out))
    assert soup.keys() == a.keys()
    for key in a:
        if a[key].is_floating_point():
            torch.testing.assert_close(soup[key], (a[key] + b[key]) / 2)
    assert not torch.equal(soup["embeddings.word_embeddings.weight"], a["embeddings.word_embeddings.weight"])
    record = json.loads((out / "averaging.json").read_text())
    assert record["weights"] == [0.5, 0.5] and len(record["averaged_from"]) == 2
    vectors = TextEncoder(EncoderSettings(model=str(out), pooling="mean")).encode_questions(["who wrote hamlet"])
    assert vectors.shape == (1, 32) and np.isfinite(vectors).all()


def test_training_outputs_are_averaged_encoder_by_encoder_with_weights(tiny_bert_dir: Path, tmp_path: Path) -> None:
    runs = []
    for index, seed in enumerate((3, 4)):
        run = tmp_path / f"run{index}"
        _training_output(tiny_bert_dir, run)
        shutil.rmtree(run / "passage_encoder")
        _perturbed_copy(tiny_bert_dir, run / "passage_encoder", seed=seed)
        runs.append(run)
    out = average_models(runs, tmp_path / "soup", weights=[3, 1])
    key = "encoder.layer.0.attention.self.query.weight"
    p0, p1 = (load_file(str(run / "passage_encoder" / "model.safetensors"))[key] for run in runs)
    torch.testing.assert_close(
        load_file(str(out / "passage_encoder" / "model.safetensors"))[key], 0.75 * p0 + 0.25 * p1
    )
    question = load_file(str(out / "question_encoder" / "model.safetensors"))[key]
    torch.testing.assert_close(question, load_file(str(tiny_bert_dir / "model.safetensors"))[key])
    assert json.loads((out / "averaging.json").read_text())["weights"] == [0.75, 0.25]
    # The averaged pair records its own passage encoder, not an ingredient's.
    from dpr_components.encoders.pairing import (
        PAIR_FILE,
        weights_digest,
        write_pair_files,
    )

    write_pair_files(runs[0] / "question_encoder", runs[0] / "passage_encoder")
    out = average_models(runs, tmp_path / "soup", weights=[3, 1])
    record = json.loads((out / "question_encoder" / PAIR_FILE).read_text())
    assert record == {"role": "question", "passage_encoder": weights_digest(str(out / "passage_encoder"))}


def test_different_architectures_are_refused_by_name(tiny_bert_dir: Path, tmp_path: Path) -> None:
    other = shutil.copytree(tiny_bert_dir, tmp_path / "other")
    config = json.loads((other / "config.json").read_text())
    config["num_hidden_layers"] = 3
    (other / "config.json").write_text(json.dumps(config))
    with pytest.raises(AveragingError, match=r"config.json differs"):
        average_models([tiny_bert_dir, other], tmp_path / "soup")
    assert not (tmp_path / "soup").exists()


def test_a_tokenizer_s_saved_truncation_does_not_block_averaging(tiny_bert_dir: Path, tmp_path: Path) -> None:
    """A tokenizer saved after a call with other lengths is the same vocabulary (a fine-tuned copy
    of a model and the model itself, e.g. for interpolating with the zero-shot weights)."""
    other = shutil.copytree(tiny_bert_dir, tmp_path / "other")
    tokenizer = json.loads((other / "tokenizer.json").read_text())
    tokenizer["truncation"] = {"direction": "Right", "max_length": 7, "strategy": "LongestFirst", "stride": 0}
    tokenizer["padding"] = {"strategy": {"Fixed": 7}}
    (other / "tokenizer.json").write_text(json.dumps(tokenizer))
    average_models([tiny_bert_dir, other], tmp_path / "soup")
    vocabulary = dict(tokenizer, model={**tokenizer["model"], "vocab": {"[PAD]": 0}})
    (other / "tokenizer.json").write_text(json.dumps(vocabulary))
    with pytest.raises(AveragingError, match=r"tokenizer.json differs"):
        average_models([tiny_bert_dir, other], tmp_path / "soup2")


def test_cli_reports_bad_input_without_a_traceback(
    tiny_bert_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _training_output(tiny_bert_dir, tmp_path / "run")
    assert average_cli([str(run), str(tiny_bert_dir), "--out", str(tmp_path / "soup")]) == 2
    assert "mix of training outputs" in capsys.readouterr().err
    assert average_cli([str(tiny_bert_dir), "--out", str(tmp_path / "soup")]) == 2
    assert "at least two" in capsys.readouterr().err
    assert average_cli([str(tiny_bert_dir), str(tiny_bert_dir), "--weights", "1", "--out", str(tmp_path / "s")]) == 2
    assert "1 weights given for 2 models" in capsys.readouterr().err
    assert average_cli([str(tiny_bert_dir), str(tmp_path / "missing"), "--out", str(tmp_path / "s")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_tensors_equal_in_every_model_stay_bit_identical() -> None:
    import torch

    from dpr_components.encoder_training.averaging import average_state_dicts

    fixed = torch.tensor([0.1, 0.7, 1 / 3], dtype=torch.float32)
    states = [{"fixed": fixed.clone(), "learned": torch.full((3,), float(i))} for i in range(3)]
    averaged = average_state_dicts(states, [1 / 3] * 3, ["a", "b", "c"])
    assert torch.equal(averaged["fixed"], fixed)  # a float sum of thirds would round it
    assert torch.allclose(averaged["learned"], torch.ones(3))
