"""The peer benchmark's parts without the peer environment: the worker's line protocol (a tiny model,
in this process and in a child process), the accuracy bound and "ST best exact" on synthetic timings,
and the pins of the peer environment."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.encoding import peer_env
from benchmarks.encoding.peer_worker import SYSTEMS as WORKER_SYSTEMS
from benchmarks.encoding.peer_worker import encode_request, load_system, onnx_file, openvino_kwargs, serve
from benchmarks.encoding.peers import (
    BOUND,
    OURS_DEFAULT,
    OURS_FP32,
    OURS_OPENVINO,
    OURS_TORCH,
    WORKER,
    AtBatchSize,
    PeerError,
    PeerProcess,
    best_exact,
    headline,
    onnx_quantization,
    our_system_names,
    ours_text,
    peer_batch_sizes,
    peer_systems,
    peer_variants,
    render,
    system_rows,
    worker_environment,
)

pytestmark = pytest.mark.usefixtures("one_thread")

OPENVINO_DEFAULT = {
    "backend": "openvino", "reason": "the fastest exact back end here", "computes": "bf16", "openvino": "2026.4.1",
}  # fmt: skip
PAIRS = [["Hamlet", "Hamlet is a tragedy by William Shakespeare."], ["Paris", "Paris is the capital of France."]]


def unit_rows(count: int, cosines: list[float]) -> np.ndarray:
    """``count`` unit vectors in 2-d whose cosine to (1, 0) are ``cosines`` (repeated)."""
    angles = np.arccos(np.resize(np.array(cosines), count))
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)


def synthetic_rows() -> list[dict]:
    reference = unit_rows(4, [1.0])
    vectors = {
        OURS_FP32: reference,
        OURS_DEFAULT: unit_rows(4, [0.9999]),
        OURS_TORCH: unit_rows(4, [0.99995]),
        "ST torch fp32": reference,
        "ST onnx fp32": unit_rows(4, [1.0, 0.9995]),
        "ST onnx int8": unit_rows(4, [1.0, 0.995]),  # fastest, but one passage below the bound
    }
    seconds = {OURS_FP32: 8.0, OURS_DEFAULT: 2.0, OURS_TORCH: 2.5, "ST torch fp32": 8.0, "ST onnx fp32": 4.0}
    seconds["ST onnx int8"] = 0.5
    computes = dict.fromkeys(vectors, "fp32")
    return system_rows(seconds, vectors, computes, repeats=2)


def test_rows_give_rates_over_all_repeats_and_the_bound_passage_by_passage() -> None:
    rows = {row["system"]: row for row in synthetic_rows()}
    assert rows["ST torch fp32"]["passages_per_s"] == pytest.approx(4 * 2 / 8.0)
    assert rows["ST onnx fp32"]["cosine_to_ours_fp32"]["min"] == pytest.approx(0.9995)
    assert rows["ST onnx fp32"]["within_bound"] and not rows["ST onnx int8"]["within_bound"]
    assert rows[OURS_DEFAULT]["kind"] == "ours" and rows["ST onnx int8"]["kind"] == "peer"
    assert BOUND == 0.999


def test_st_best_exact_is_the_fastest_peer_within_the_bound() -> None:
    rows = synthetic_rows()
    best = best_exact(rows)
    assert best is not None and best["system"] == "ST onnx fp32"  # ours are faster and the int8 peer is not exact
    result = headline(rows)
    assert result["st_best_exact"] == "ST onnx fp32"
    assert result["ratio_ours_default_to_st_best_exact"] == pytest.approx(2.0)
    assert result["goal_met"] is True


def test_no_exact_peer_means_no_best_exact() -> None:
    rows = [row for row in synthetic_rows() if row["system"] not in ("ST torch fp32", "ST onnx fp32")]
    assert best_exact(rows) is None
    assert headline(rows)["ratio_ours_default_to_st_best_exact"] is None


def test_the_report_names_the_best_exact_peer_and_a_short_run() -> None:
    rows = synthetic_rows()
    summary = {
        "machine": {
            "date": "2026-01-01", "cpu": "a CPU", "cores": 2, "threads": 1, "flags": {"avx2": True},
            "native_bf16": False, "load_average_start": 0.5, "load_average_end": 0.7, "torch": "2.13.0",
        },
        "config": {
            "isa": "avx2", "passages": 200, "repeats": 1, "seed": 0, "batch_size": 64, "chunk": 100, "calibration": 50,
        },
        "ours_default": OPENVINO_DEFAULT,
        "peer_versions": {"sentence-transformers": "5.7.0"},
        "skipped": {"torch-bf16": "no native bf16"},
        "systems": rows,
        "headline": headline(rows),
    }  # fmt: skip
    markdown = render(summary, "python -m benchmarks.encoding.peers --passages 200 --repeats 1")
    assert "**ST best exact: ST onnx fp32**" in markdown and "**2.00x** ST best exact (goal 1.5x: met)" in markdown
    assert "**A short run** (200 passages, 1 repeat(s)" in markdown
    assert "(AVX2 only)" in markdown and "- torch-bf16: no native bf16" in markdown
    assert "| ours default ÷ | ours torch ÷ |" in markdown and "OpenVINO ÷" not in markdown
    assert "| ST onnx int8 | fp32 | 16.0 | 0.25x | 0.20x | 0.99500 |" in markdown
    assert "Our default (OpenVINO, bf16): 4.0 passages/s" in markdown
    assert "on torch 2.13.0 and OpenVINO 2026.4.1. *Ours default* is what `PassageEmbedder()` runs here" in markdown
    assert "also runs at batch size" not in markdown  # a run from before the option
    summary["config"]["peer_batch_sizes"] = "64,16"
    markdown = render(summary, "python -m benchmarks.encoding.peers")
    assert "Every peer also runs at batch size 16 (rows ending in the size)" in markdown


def test_peers_run_at_the_run_batch_size_first_then_each_other_once() -> None:
    assert peer_batch_sizes("64,16", 64) == [64, 16]
    assert peer_batch_sizes("16, 8,16", 64) == [64, 16, 8]
    for bad in ("16,x", "0"):
        with pytest.raises(SystemExit, match="--peer-batch-sizes"):
            peer_batch_sizes(bad, 64)


def test_a_peer_at_another_batch_size_is_a_row_of_its_own() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.sizes: list[int] = []

        def encode_timed(self, texts: list[str], titles: list[str], batch_size: int) -> tuple[np.ndarray, float]:
            self.sizes.append(batch_size)
            return np.zeros((len(texts), 2), dtype=np.float32), 1.0

    process = Recorder()
    peers = {"openvino-bf16": ("ST openvino bf16", "bf16")}
    systems, computes = peer_variants(peers, {"openvino-bf16": process}, [64, 16], 64)
    assert list(systems) == ["ST openvino bf16", "ST openvino bf16, batch 16"]
    assert computes == {"ST openvino bf16": "bf16", "ST openvino bf16, batch 16": "bf16"}
    assert isinstance(systems["ST openvino bf16, batch 16"], AtBatchSize)
    for system in systems.values():
        system.encode_timed(["text"], ["title"], 64)
    assert process.sizes == [64, 16]


def test_ours_default_is_backend_auto_and_ours_openvino_only_when_auto_is_not_it() -> None:
    assert our_system_names("openvino") == [OURS_DEFAULT, OURS_TORCH, OURS_FP32]
    assert our_system_names("torch") == [OURS_DEFAULT, OURS_TORCH, OURS_OPENVINO, OURS_FP32]
    on_openvino = ours_text(OPENVINO_DEFAULT)
    assert "backend auto, which resolved to **OpenVINO** (the fastest exact back end here)" in on_openvino
    assert "computing in bf16 with one stream per thread" in on_openvino and "*ours OpenVINO*" not in on_openvino
    assert "rows queued" not in on_openvino  # a run from before the ring of requests
    assert "thread, batches of 8 rows queued on them" in ours_text({**OPENVINO_DEFAULT, "request_rows": "8"})
    on_torch = ours_text({**OPENVINO_DEFAULT, "backend": "torch", "reason": "the openvino package is not installed"})
    assert "resolved to **torch** (the openvino package is not installed)" in on_torch
    assert '*ours OpenVINO* is `PassageEmbedder(backend="openvino")`' in on_torch
    assert '*ours torch* is `PassageEmbedder(backend="torch")`' in on_torch


def test_peer_choice_follows_the_cpu() -> None:
    assert onnx_quantization({"avx512_vnni": True}, "native", "x86_64") == "avx512_vnni"
    assert onnx_quantization({"avx512_vnni": True}, "avx2", "x86_64") == "avx2"
    assert onnx_quantization({}, "native", "aarch64") == "arm64"
    assert "torch-bf16" in peer_systems(True, "avx2") and "openvino-bf16" in peer_systems(True, "avx2")
    without = peer_systems(False, "avx2")
    assert "torch-bf16" not in without and "onnx-qint8-avx2" in without
    assert set(without) <= set(WORKER_SYSTEMS)
    assert onnx_file("onnx-qint8-avx2") == "onnx/model_int8_avx2.onnx"


def test_openvino_peers_compute_in_f32_under_the_avx2_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert "INFERENCE_PRECISION_HINT" not in openvino_kwargs("openvino-qint8", 2)["ov_config"]
    assert openvino_kwargs("openvino-bf16", 2)["ov_config"]["INFERENCE_PRECISION_HINT"] == "bf16"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    limited = openvino_kwargs("openvino-qint8", 2)
    assert limited["ov_config"] == {"INFERENCE_NUM_THREADS": 2, "INFERENCE_PRECISION_HINT": "f32"}
    assert limited["file_name"] == "openvino/openvino_model_qint8_quantized.xml"


def test_the_worker_answers_each_line(tiny_st_dir: Path, tmp_path: Path) -> None:
    model = load_system(str(tiny_st_dir), "torch-fp32", tmp_path, threads=1)
    out = tmp_path / "vectors.npy"
    requests = io.StringIO(
        json.dumps({"pairs": PAIRS, "batch_size": 2, "out": str(out)}) + "\n\n" + json.dumps({"pairs": PAIRS}) + "\n"
    )
    replies = io.StringIO()
    serve(lambda request: encode_request(model, request), requests, replies)
    first, second = [json.loads(line) for line in replies.getvalue().splitlines()]
    assert first["seconds"] > 0
    expected = model.encode([tuple(p) for p in PAIRS], batch_size=2, convert_to_numpy=True)
    np.testing.assert_allclose(np.load(out), expected, atol=1e-6)
    assert second == {"error": "KeyError: 'batch_size'"}


def test_a_peer_process_encodes_on_request(tiny_st_dir: Path, tmp_path: Path) -> None:
    command = [sys.executable, str(WORKER), "--system", "torch-fp32", "--model", str(tiny_st_dir)]
    peer = PeerProcess([*command, "--exports", str(tmp_path)], worker_environment(1), tmp_path, "t")
    try:
        assert peer.info["sentence-transformers"]
        vectors, seconds = peer.encode_timed([text for _, text in PAIRS], [title for title, _ in PAIRS], 2)
        assert vectors.shape == (2, 32) and vectors.dtype == np.float32 and seconds > 0
        with pytest.raises(PeerError, match="peer t: "):
            peer.encode_timed(["text"], ["title"], 0)
    finally:
        peer.close()
    assert peer.process.returncode == 0


def test_a_peer_that_cannot_start_says_why(tmp_path: Path) -> None:
    refusal = [sys.executable, "-c", 'print(\'{"ready": false, "error": "no such back end"}\')']
    with pytest.raises(PeerError, match="peer x did not start: no such back end"):
        PeerProcess(refusal, {}, tmp_path, "x")
    crash = [sys.executable, "-c", "import sys; sys.exit('gone')"]
    with pytest.raises(PeerError, match=r"(?s)peer y stopped.*gone"):
        PeerProcess(crash, {}, tmp_path, "y")


def test_the_peer_environment_pins_torch() -> None:
    pins = peer_env.pinned(peer_env.CONSTRAINTS.read_text(encoding="utf-8"))
    assert peer_env.torch_pin(peer_env.CONSTRAINTS.read_text(encoding="utf-8")) == f"torch=={pins['torch']}"
    assert {"sentence-transformers", "transformers", "optimum-onnx", "optimum-intel"} <= set(pins)
    with pytest.raises(peer_env.PeerEnvError, match="must pin torch"):
        peer_env.torch_pin("sentence-transformers==5.7.0\n# torch==2.13.0\n")
    assert peer_env.pinned("torch == 2.13.0  # cpu\ntorch>=2\n") == {"torch": "2.13.0"}


def test_the_stamp_follows_the_pins(tmp_path: Path) -> None:
    assert peer_env.stamp_text("torch==2.13.0\n") != peer_env.stamp_text("torch==2.14.0\n")
    assert not peer_env.is_ready(tmp_path)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").write_text("")
    (tmp_path / peer_env.STAMP).write_text(peer_env.stamp_text(peer_env.CONSTRAINTS.read_text(encoding="utf-8")))
    assert peer_env.is_ready(tmp_path)
