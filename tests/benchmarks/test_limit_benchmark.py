"""The limit benchmark's arithmetic, its GEMM measurement on tiny shapes, and a tiny end-to-end run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.encoding.limit import (
    bucket_groups,
    bucket_labels,
    category_seconds,
    compute_precision,
    cpu_flags,
    encoder_flops,
    fraction_of_attainable,
    gemm_shapes,
    length_bucket,
    main,
    measure_gemms,
    node_category,
    node_type_seconds,
    op_seconds,
    padded_lengths,
    padding_share,
    token_lengths,
    top_node_types,
    wall_shares,
)
from dpr_components.encoders.backend_choice import ENV_VARIABLE, forget_choices
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.text_encoder import BUCKET_BATCHES, TextEncoder

pytestmark = pytest.mark.usefixtures("one_thread")


def test_encoder_flops_match_a_hand_count() -> None:
    # H=4, I=8: per token and layer 8*16 + 4*4*8 = 256; 8 tokens, 2 layers -> 4096.
    # Attention per layer 4*4*(3*3 + 5*5) = 544; 2 layers -> 1088.
    flops = encoder_flops(hidden=4, intermediate=8, layers=2, heads=2, sequence_lengths=[3, 5])
    assert flops == {"dense": 4096, "attention": 1088, "total": 5184}


def test_encoder_flops_do_not_depend_on_heads_and_reject_uneven_heads() -> None:
    one = encoder_flops(hidden=8, intermediate=16, layers=1, heads=1, sequence_lengths=[4])
    assert one == encoder_flops(hidden=8, intermediate=16, layers=1, heads=4, sequence_lengths=[4])
    with pytest.raises(ValueError):
        encoder_flops(hidden=8, intermediate=16, layers=1, heads=3, sequence_lengths=[4])


def test_fraction_of_attainable() -> None:
    assert fraction_of_attainable(50.0, 200.0) == 0.25
    assert fraction_of_attainable(50.0, None) is None
    assert compute_precision(True) == "bf16" and compute_precision(False) == "fp32"


def test_length_buckets() -> None:
    assert [length_bucket(n) for n in (1, 64, 65, 128, 129, 256, 257)] == [
        "<=64",
        "<=64",
        "65-128",
        "65-128",
        "129-256",
        "129-256",
        ">256",
    ]
    assert bucket_labels() == ["<=64", "65-128", "129-256", ">256"]


def test_padded_lengths_sort_within_windows() -> None:
    assert padded_lengths([3, 5, 2, 7, 1], batch_size=2, window=4) == [7, 7, 3, 3, 1]
    assert padded_lengths([], batch_size=2, window=4) == []
    assert padded_lengths([3, 5, 2, 7, 1, 9], batch_size=2, window=4, max_length=12) == [8, 8, 8, 8, 12, 12]


def test_padded_lengths_match_the_batches_the_encoder_runs(tiny_st_dir: Path) -> None:
    encoder = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32"), batch_size=3)
    texts = [" ".join(["word"] * (i * 7 % 23 + 1)) for i in range(11)]
    titles: list[str | None] = [f"title {i}" if i % 4 else None for i in range(11)]
    shapes: list[tuple[int, ...]] = []
    collate = encoder._collate

    def recording(tokens, rows):
        batch = collate(tokens, rows)
        shapes.append(tuple(batch["input_ids"].shape))
        return batch

    encoder.load()
    encoder._collate = recording  # type: ignore[method-assign]
    encoder.encode_passages(texts, titles)
    padded = padded_lengths(token_lengths(encoder, texts, titles), 3, 3 * BUCKET_BATCHES, encoder.max_length)
    assert sorted(padded) == sorted(length for rows, length in shapes for _ in range(rows))


def test_gemm_measurement_on_tiny_shapes() -> None:
    shapes = gemm_shapes(hidden=16, intermediate=24, tokens=32, square=16)
    results = measure_gemms(shapes, seconds=0.0)
    assert set(results) == {"fp32", "bf16", "int8"}
    for precision in ("fp32", "bf16"):
        assert results[precision]["attainable_gflops"] > 0
        assert all(
            row["available"] and row["best_gflops"] >= row["median_gflops"] > 0 for row in results[precision]["shapes"]
        )
    for row in results["int8"]["shapes"]:
        assert (row["available"] and row["best_gflops"] > 0) or (not row["available"] and row["error"])


def test_op_seconds_count_top_level_operations_by_category() -> None:
    parent = SimpleNamespace(name="aten::linear", cpu_parent=None, cpu_time_total=3_000_000)
    events = [
        parent,
        SimpleNamespace(name="aten::addmm", cpu_parent=parent, cpu_time_total=2_900_000),
        SimpleNamespace(name="aten::scaled_dot_product_attention", cpu_parent=None, cpu_time_total=1_000_000),
        SimpleNamespace(name="aten::layer_norm", cpu_parent=None, cpu_time_total=500_000),
    ]
    assert op_seconds(events) == {"linear": 3.0, "attention": 1.0, "other_ops": 0.5}


def node(node_type: str, milliseconds: float, name: str = "", status: str = "EXECUTED") -> SimpleNamespace:
    """A profiling item as OpenVINO's ``get_profiling_info()`` gives it."""
    return SimpleNamespace(
        node_type=node_type,
        node_name=name,
        exec_type="jit_avx512_bf16",
        real_time=timedelta(milliseconds=milliseconds),
        status=SimpleNamespace(name=status),
    )


def test_openvino_nodes_are_classified_by_type_and_fused_attention_by_name() -> None:
    assert node_category("FullyConnected", "layer.0.attention.self.query/aten::linear/Add") == "gemm"
    fused = "__module.model.encoder.layer.0.attention.self/aten::scaled_dot_product_attention/ScaledDotProductAttention"
    assert node_category("Subgraph", fused) == "attention"
    assert node_category("Subgraph", "Multiply_1_Add_2") == "other"
    assert [node_category(kind, "") for kind in ("ScaledDotProductAttention", "MHA", "MatMul", "Softmax")] == [
        "attention"
    ] * 4
    assert [node_category(kind, "") for kind in ("MVN", "Add", "Reorder", "Gather", "Transpose")] == ["other"] * 5


def test_node_seconds_sum_executed_nodes_over_requests() -> None:
    first = [node("FullyConnected", 6.0), node("Subgraph", 2.0, "x/aten::scaled_dot_product_attention/y")]
    second = [node("FullyConnected", 4.0), node("MVN", 1.0), node("Reshape", 9.0, status="NOT_RUN")]
    by_type = node_type_seconds([*first, *second])
    assert by_type == pytest.approx(
        {("gemm", "FullyConnected"): 0.010, ("attention", "Subgraph"): 0.002, ("other", "MVN"): 0.001}
    )
    assert category_seconds(by_type) == pytest.approx({"gemm": 0.010, "attention": 0.002, "other": 0.001})
    top = top_node_types(by_type, count=2)
    assert [(row["node_type"], row["category"]) for row in top] == [
        ("FullyConnected", "gemm"),
        ("Subgraph", "attention"),
    ]
    assert top[0]["share"] == pytest.approx(10 / 13)
    assert category_seconds({}) == {"gemm": 0.0, "attention": 0.0, "other": 0.0} and top_node_types({}) == []


def test_wall_shares_split_the_model_time_as_its_nodes_time() -> None:
    # Two parallel requests: nodes sum to 1.6 s in a model that took 0.8 s of a 1.0 s encode.
    shares = wall_shares(1.0, 0.1, 0.8, {"gemm": 1.2, "attention": 0.3, "other": 0.1})
    assert shares == pytest.approx({"tokenisation": 0.1, "gemm": 0.6, "attention": 0.15, "other": 0.05, "rest": 0.1})
    assert sum(shares.values()) == pytest.approx(1.0)
    assert wall_shares(1.0, 0.5, 0.0, {"gemm": 0.0})["gemm"] == 0.0


def test_padding_share_is_padding_of_all_computed_tokens() -> None:
    assert padding_share(real_tokens=90, padded_tokens=120) == 0.25
    assert padding_share(real_tokens=0, padded_tokens=0) == 0.0


def test_bucket_groups_keep_each_buckets_passages_in_order() -> None:
    passages = (["a", "b", "c", "d"], ["A", None, "C", "D"])
    groups = bucket_groups(passages, [70, 10, 300, 20])
    assert list(groups) == ["<=64", "65-128", ">256"]
    assert groups["<=64"] == ((["b", "d"], [None, "D"]), [10, 20])
    assert groups[">256"] == ((["c"], ["C"]), [300])


def test_cpu_flags_read_the_flags_line() -> None:
    flags = cpu_flags("model name\t: Some CPU\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\n")
    assert flags["avx2"] and flags["avx512f"] and flags["avx512_bf16"]
    assert not flags["amx_bf16"]


@pytest.fixture()
def faiss_threads_restored() -> Iterator[None]:
    import faiss

    before = faiss.omp_get_max_threads()
    yield
    faiss.omp_set_num_threads(before)


@pytest.fixture()
def default_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """What backend auto resolves to, forced by the environment for the test."""
    monkeypatch.setenv(ENV_VARIABLE, request.param)
    forget_choices()
    yield request.param
    forget_choices()


@pytest.mark.usefixtures("faiss_threads_restored")
@pytest.mark.parametrize("default_backend", ["openvino", "torch"], indirect=True)
def test_main_writes_a_report(tiny_st_dir: Path, small_corpus_file: Path, tmp_path: Path, default_backend: str) -> None:
    if default_backend == "openvino":
        pytest.importorskip("openvino")
    out = tmp_path / "report"
    argv = ["--model", str(tiny_st_dir), "--corpus", str(small_corpus_file), "--passages", "5", "--threads", "1"]
    argv += ["--seconds", "0", "--repeats", "1", "--batch-size", "2", "--gemm-tokens", "16", "--square", "16"]
    main([*argv, "--out-dir", str(out)])
    summary = json.loads((out / "limit.json").read_text())
    assert summary["config"]["passages"] == 5
    assert set(summary["encoder"]) == {"fp32", "auto"}
    assert summary["encoder"]["fp32"]["passages_per_s"] > 0
    assert summary["breakdown"]["padded_tokens"] >= summary["breakdown"]["real_tokens"] > 0
    markdown = (out / "limit.md").read_text()
    assert "python -m benchmarks.encoding.limit --model" in markdown
    assert "## Where the time goes" in markdown and "## Per bucket of real token length" in markdown
    default = summary["default_path"]
    assert default["backend"] == default_backend and default["rates"]["passages_per_s"] > 0
    assert default["rates"]["buckets"] and default["compute"] in ("fp32", "bf16")
    if default_backend == "torch":
        assert default["breakdown"] is None and "## The default path (torch)" in markdown
        return
    assert default["inference_precision"] in ("f32", "bf16") and default["streams"] == 1
    assert "## The default path (OpenVINO)" in markdown and "| tokenisation | GEMM | attention |" in markdown
    assert set(default["breakdown"]) == set(default["rates"]["buckets"])
    for bucket in default["breakdown"].values():
        assert bucket["node_seconds"]["gemm"] > 0 and bucket["top_node_types"]
        assert bucket["padded_tokens"] >= bucket["real_tokens"] > 0
        assert sum(bucket["shares"].values()) == pytest.approx(1.0)
        # The whole encoder cannot beat the ceiling its GEMMs' own rate sets.
        assert bucket["gemm_gflops"] > 0 and bucket["gemm_only_fraction"] >= bucket["gemm_fraction"] > 0
    assert default["request_rows"] == 2 and "ceiling for the encoder" in markdown
