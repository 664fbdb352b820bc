"""Passage-encoding back ends side by side: torch (fp32, bf16 weights, ``torch.compile``),
OpenVINO (fp32, bf16, int8 through NNCF), ONNX Runtime with static int8, and
sentence-transformers fp32 as the peer.

Every system but the peer runs inside our ``TextEncoder`` (same tokenisation, length bucketing,
batches and mean pooling in float32): only the model call differs. The peer encodes the same
``(title, text)`` pairs end to end. Systems take turns ``--chunk`` passages at a time (rotating
order) in each of ``--repeats`` repeats, so that load changes hit all of them alike; the table
shows passages/s over all repeats and the ratio to the peer on the same passages, the achieved
GFLOP/s (padded batches) as a fraction of the attainable matrix rate of the precision it computes
in (measured in the same run, as ``benchmarks.encoding.limit`` does), and each system's cosine
to torch fp32, passage by passage.

int8 calibration uses ``--calibration`` other pool passages (never the measured ones). Quantised:
the linear layers' matrix products (per-channel weights); embeddings, LayerNorm, softmax and the
attention products stay in float. ``int8, FFN output in float`` leaves each layer's second
feed-forward product (the one whose input, after GELU, has the widest range) unquantised.

``--isa avx2`` limits oneDNN and MKL to AVX2 (no AVX-512, no native bf16 or VNNI): what an
AVX2-only CPU runs. It is set before torch or OpenVINO load (the benchmark starts itself again).

    python -m benchmarks.encoding.backends                  # docs/benchmarks/encoding/backends.{md,json}
    python -m benchmarks.encoding.backends --isa avx2       # docs/benchmarks/encoding/backends_avx2.{md,json}
    python -m benchmarks.encoding.backends --passages 200 --repeats 1 --out-dir /tmp/backends
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.common import REPO_ROOT, command_line, log, set_threads, write_report
from benchmarks.encoding.encoding_benchmark import cosine_stats, load_sentence_transformer
from benchmarks.encoding.limit import (
    BUCKET_BATCHES,
    encoder_flops,
    fraction_of_attainable,
    gemm_shapes,
    machine,
    measure_gemms,
    model_sizes,
    padded_lengths,
    sample_passages,
)
from dpr_components.encoders.bf16_probe import bf16_supported
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.model_layout import resolve_model_path
from dpr_components.encoders.openvino_model import INPUT_NAMES as INPUTS
from dpr_components.encoders.openvino_model import (
    HiddenStates,
    HiddenStatesOutput,
    OpenVINOEncoderModel,
    convert_to_openvino,
)
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.evaluation.pool import pool_passages
from dpr_components.evaluation.tables import markdown_table, produced_by

MODULE = "benchmarks.encoding.backends"
DPR_WIKIPEDIA_PASSAGES = 21_015_324  # DPR's psgs_w100.tsv (Karpukhin et al. 2020, section 4.1)
AVX2_ENVIRONMENT = {
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "DNNL_MAX_CPU_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "ATEN_CPU_CAPABILITY": "avx2",
}
AVX2_NOTE = [
    "- `--isa avx2`: oneDNN (the kernels of torch and OpenVINO) and MKL were limited to AVX2, as on a CPU "
    "without AVX-512. ONNX Runtime picks its kernels from the CPU's flags itself, so its row still ran "
    "AVX-512 code: it is not an AVX2-only figure."
]
FFN_OUTPUT = r".*layer\.\d+\.output\.dense.*"  # each layer's second feed-forward product
Batch = dict[str, torch.Tensor]


def with_model(model: Any, batch_size: int, model_name: str = BUNDLED_MINILM) -> TextEncoder:
    """Our fp32 ``TextEncoder`` of ``model_name`` running ``model`` (anything called like a transformers
    encoder): the same tokenising, batching and pooling, only the model call differs."""
    encoder = TextEncoder(EncoderSettings(model=model_name, precision="fp32"), batch_size=batch_size)
    encoder.load()
    encoder._model = model
    return encoder


def numpy_inputs(batch: Batch) -> dict[str, np.ndarray]:
    return {name: batch[name].numpy() for name in INPUTS}


def calibration_batches(encoder: TextEncoder, texts: list[str], titles: list[str | None], size: int = 4) -> list[Batch]:
    """Calibration inputs in batches of ``size`` passages of mixed lengths (as they come)."""
    batches = []
    for _, tokens in encoder._token_windows(texts, titles):
        for start in range(0, len(tokens.ids), size):
            batches.append(encoder._collate(tokens, np.arange(start, min(start + size, len(tokens.ids)))))
    return batches


def openvino_systems(model: torch.nn.Module, calibration: list[Batch], threads: int) -> dict[str, OpenVINOEncoderModel]:
    """OpenVINO fp32 and bf16 (on all threads, and in one stream per thread), and NNCF int8 (all products;
    FFN output left in float)."""
    import nncf
    import openvino as ov

    converted = convert_to_openvino(model)
    # OpenVINO reads the CPU's flags itself; torch's check follows the --isa limit too.
    bf16 = bf16_supported() and "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")

    def int8(ignored: list[str]) -> Any:
        return nncf.quantize(
            converted,
            nncf.Dataset([numpy_inputs(b) for b in calibration]),
            model_type=nncf.ModelType.TRANSFORMER,
            preset=nncf.QuantizationPreset.MIXED,
            subset_size=len(calibration),
            ignored_scope=nncf.IgnoredScope(patterns=ignored) if ignored else None,
        )

    float_hint = "bf16" if bf16 else "f32"
    systems = {"OpenVINO fp32": OpenVINOEncoderModel(converted, model.config, "f32", threads)}
    if bf16:
        systems["OpenVINO bf16"] = OpenVINOEncoderModel(converted, model.config, "bf16", threads)
    if threads > 1:  # batches on the streams at once, one thread each
        for label, hint in (("fp32", "f32"), ("bf16", "bf16")) if bf16 else (("fp32", "f32"),):
            systems[f"OpenVINO {label}, {threads} streams"] = OpenVINOEncoderModel(
                converted, model.config, hint, threads, streams=threads
            )
    for name, ignored in (
        (f"OpenVINO int8 ({float_hint} elsewhere)", []),
        (f"OpenVINO int8, FFN output in {float_hint}", [FFN_OUTPUT]),
    ):
        systems[name] = OpenVINOEncoderModel(int8(ignored), model.config, float_hint, threads)
    return systems


class _Reader:
    """ONNX Runtime's calibration reader over our batches."""

    def __init__(self, batches: list[Batch]) -> None:
        self.items = iter([numpy_inputs(b) for b in batches])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.items, None)


class OnnxRuntimeModel:
    """An ONNX Runtime session called like a transformers encoder."""

    def __init__(self, session: Any, config: Any) -> None:
        self.session, self.config = session, config

    def __call__(self, **batch: torch.Tensor) -> HiddenStatesOutput:
        return HiddenStatesOutput(torch.from_numpy(self.session.run(None, numpy_inputs(batch))[0]))


def onnx_static_int8(model: torch.nn.Module, calibration: list[Batch], folder: Path, threads: int) -> OnnxRuntimeModel:
    """ONNX Runtime with static int8 (QDQ, per-channel weights, MatMul only)."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    exported, prepared, quantised = folder / "model.onnx", folder / "prepared.onnx", folder / "int8.onnx"
    example = tuple(torch.ones(2, 8, dtype=torch.int64) for _ in INPUTS)
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUTS}
    torch.onnx.export(
        HiddenStates(model).eval(), example, str(exported), dynamo=False, input_names=list(INPUTS),
        output_names=["hidden"], dynamic_axes=axes, opset_version=17,
    )  # fmt: skip
    with contextlib.chdir(folder):  # both steps leave scratch files in the working folder
        quant_pre_process(str(exported), str(prepared), skip_symbolic_shape=True)
        quantize_static(
            str(prepared), str(quantised), _Reader(calibration), quant_format=QuantFormat.QDQ, per_channel=True,
            weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8, op_types_to_quantize=["MatMul"],
        )  # fmt: skip
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(quantised), options, providers=["CPUExecutionProvider"])
    return OnnxRuntimeModel(session, model.config)


def build_systems(
    args: argparse.Namespace, calibration: list[str], work: Path
) -> tuple[dict[str, Any], dict[str, str]]:
    """Every system (an encoder, or the peer) and the precision each computes its products in."""
    fp32 = TextEncoder(EncoderSettings(model=BUNDLED_MINILM, precision="fp32"), batch_size=args.batch_size)
    auto = TextEncoder(EncoderSettings(model=BUNDLED_MINILM, precision="auto"), batch_size=args.batch_size)
    fp32.load()
    auto.load()
    batches = calibration_batches(fp32, *calibration)
    compute = {"torch fp32": "fp32", "sentence-transformers fp32 (peer)": "fp32"}
    systems: dict[str, Any] = {"torch fp32": fp32}
    if auto.uses_bf16:
        systems["torch bf16 weights (precision auto)"] = auto
        # the compiled module forwards attribute reads (config) to the model it wraps
        systems["torch.compile, bf16 weights"] = with_model(torch.compile(auto._model, dynamic=True), args.batch_size)
    for name, model in openvino_systems(fp32._model, batches, args.threads).items():
        systems[name] = with_model(model, args.batch_size)
    onnx = onnx_static_int8(fp32._model, batches, work, args.threads)
    systems["ONNX Runtime static int8"] = with_model(onnx, args.batch_size)
    systems["sentence-transformers fp32 (peer)"] = load_sentence_transformer()
    for name in systems:
        compute.setdefault(name, "int8" if "int8" in name else "bf16" if "bf16" in name else "fp32")
    return systems, compute


def encode(system: Any, texts: list[str], titles: list[str], batch_size: int) -> np.ndarray:
    if isinstance(system, TextEncoder):
        return system.encode_passages(texts, list(titles))
    return system.encode(
        list(zip(titles, texts, strict=True)), batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False
    )


def timed_encode(system: Any, texts: list[str], titles: list[str], batch_size: int) -> tuple[np.ndarray, float]:
    """The vectors and the seconds they took; a system in a process of its own (``encode_timed``) times itself."""
    if hasattr(system, "encode_timed"):
        return system.encode_timed(texts, titles, batch_size)
    begin = time.perf_counter()
    vectors = encode(system, texts, titles, batch_size)
    return vectors, time.perf_counter() - begin


def rotations(names: Sequence[str], chunks: int, repeats: int) -> Iterator[tuple[int, list[str]]]:
    """(chunk, systems in the order they run on it): the order rotates by one at every chunk."""
    turn = 0
    for _ in range(repeats):
        for chunk in range(chunks):
            yield chunk, [names[(turn + i) % len(names)] for i in range(len(names))]
            turn += 1


def measure(systems: dict[str, Any], texts: list[str], titles: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Seconds per system over all repeats, and each system's vectors (from the last repeat)."""
    seconds = dict.fromkeys(systems, 0.0)
    vectors: dict[str, dict[int, np.ndarray]] = {name: {} for name in systems}
    for name, system in systems.items():  # warm-up (compilation, first-call allocations)
        timed_encode(system, texts[: args.batch_size * 2], titles[: args.batch_size * 2], args.batch_size)
        log(f"warmed up {name}")
    starts = list(range(0, len(texts), args.chunk))
    for chunk, order in rotations(list(systems), len(starts), args.repeats):
        part = slice(starts[chunk], starts[chunk] + args.chunk)
        for name in order:
            vectors[name][chunk], spent = timed_encode(systems[name], texts[part], titles[part], args.batch_size)
            seconds[name] += spent
    joined = {name: np.concatenate([parts[c] for c in sorted(parts)]) for name, parts in vectors.items()}
    return {"seconds": seconds, "vectors": joined}


def summarise(
    args: argparse.Namespace, measured: dict[str, Any], compute: dict[str, str], flops: int, attainable: dict[str, Any]
) -> list[dict[str, Any]]:
    passages = len(measured["vectors"]["torch fp32"]) * args.repeats
    peer = measured["seconds"]["sentence-transformers fp32 (peer)"]
    reference = measured["vectors"]["torch fp32"]
    rows = []
    for name, seconds in measured["seconds"].items():
        gflops = flops * args.repeats / seconds / 1e9
        rate = attainable.get(compute[name], {}).get("attainable_gflops")
        rows.append({
            "system": name,
            "compute": compute[name],
            "passages_per_s": passages / seconds,
            "ratio_vs_peer": peer / seconds,
            "gflops_padded": gflops,
            "fraction_of_attainable": fraction_of_attainable(gflops, rate),
            "cosine_to_torch_fp32": cosine_stats(reference, measured["vectors"][name]),
        })  # fmt: skip
    return rows


def render(summary: dict[str, Any], command: str) -> str:
    config, machine_info = summary["config"], summary["machine"]
    lines = [
        "# Passage encoding back ends side by side",
        "",
        f"Measured on {machine_info['date']}.",
        "",
        f"- Machine: {machine_info['cpu']}, {machine_info['threads']} threads, torch {machine_info['torch']}; "
        f"instruction set {config['isa']}; native bf16 (as torch sees it): {machine_info['native_bf16']}. "
        f"Load average {machine_info['load_average_start']:.2f} at the start, {machine_info['load_average_end']:.2f} at the end.",
        f"- {config['passages']} pool passages (seed {config['seed']}), batch size {config['batch_size']}, "
        f"{config['repeats']} repeat(s), systems taking turns {config['chunk']} passages at a time; int8 calibrated on "
        f"{config['calibration']} other pool passages. Padded tokens per real token: {summary['padding']:.2f}.",
        "- Attainable matrix rate (GFLOP/s, best over the encoder's GEMM shapes, this run): "
        + ", ".join(f"{p} {r['attainable_gflops']:.0f}" for p, r in summary["gemm"].items() if r["attainable_gflops"])
        + ". int8 systems are held to the int8 rate, though some of their products stay in float. These "
        "rates are torch's matrix products; OpenVINO's own kernels can run faster (a fraction over 100%).",
        *(AVX2_NOTE if config["isa"] == "avx2" else []),
        "",
    ]
    header = [
        "system", "computes in", "passages/s", "vs peer", "GFLOP/s", "of attainable",
        "cosine min", "p01", "mean", "21M passages",
    ]  # fmt: skip
    body = []
    for row in summary["systems"]:
        cos = row["cosine_to_torch_fp32"]
        fraction = row["fraction_of_attainable"]
        body.append([
            row["system"], row["compute"], f"{row['passages_per_s']:.1f}", f"{row['ratio_vs_peer']:.2f}x",
            f"{row['gflops_padded']:.0f}", "n/a" if fraction is None else f"{100 * fraction:.1f}%",
            f"{cos['min']:.5f}", f"{cos['p01']:.5f}", f"{cos['mean']:.5f}",
            f"{DPR_WIKIPEDIA_PASSAGES / row['passages_per_s'] / 3600:.0f} h",
        ])  # fmt: skip
    lines += markdown_table(header, body, "llrrrrrrrr")
    lines += [
        "",
        "Cosine: each passage's vector against torch fp32's. The project keeps a precision only when the "
        "cosine is at least 0.999 and top-1/5/20 on nq/dev and squad/dev over the full pool stay within 0.2 "
        "of fp32 (docs/benchmarks/encoding/encoding.md). *21M passages*: hours for DPR's 21,015,324 Wikipedia passages "
        "on this machine at this rate (their lengths differ from the pool's a little).",
        "",
        *produced_by(command),
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--calibration", type=int, default=600, help="other pool passages for int8 calibration")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--chunk", type=int, default=250, help="passages per turn")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gemm-seconds", type=float, default=1.0)
    parser.add_argument("--isa", choices=["native", "avx2"], default="native")
    parser.add_argument("--out-dir", type=Path, default=REPO_ROOT / "docs" / "benchmarks" / "encoding")
    parser.add_argument(
        "--from-json", action="store_true", help="render the report again from its JSON, measure nothing"
    )
    return parser.parse_args(argv)


def rerun_under_isa(isa: str, module: str, argv: Sequence[str]) -> None:
    """Under ``--isa avx2``, run ``module`` again with oneDNN and MKL limited to AVX2 and exit with its code:
    the limit must be in place before torch and OpenVINO load their kernels (processes it starts inherit it)."""
    if isa == "avx2" and os.environ.get("ONEDNN_MAX_CPU_ISA") != "AVX2":
        sys.exit(subprocess.call([sys.executable, "-m", module, *argv], env={**os.environ, **AVX2_ENVIRONMENT}))


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if not args.from_json:
        rerun_under_isa(args.isa, MODULE, argv)
    suffix = "" if args.isa == "native" else f"_{args.isa}"
    if args.from_json:
        summary = json.loads((args.out_dir / f"backends{suffix}.json").read_text(encoding="utf-8"))
        write_report(args.out_dir / f"backends{suffix}", summary, render(summary, summary["command"]))
        return
    set_threads(args.threads)
    start_load = os.getloadavg()[0]
    pool = pool_passages()
    chosen = sample_passages(pool, args.passages + args.calibration, args.seed)
    measured_passages, calibration = chosen[: args.passages], chosen[args.passages :]
    texts, titles = [p.text for p in measured_passages], [p.title for p in measured_passages]
    with tempfile.TemporaryDirectory(prefix="backends-") as work:
        systems, compute = build_systems(
            args, ([p.text for p in calibration], [p.title for p in calibration]), Path(work)
        )
        sizes = model_sizes(resolve_model_path(BUNDLED_MINILM))
        gemm = measure_gemms(gemm_shapes(sizes["hidden"], sizes["intermediate"], 8192, 0)[:3], args.gemm_seconds)
        lengths = systems["torch fp32"].token_lengths(texts, titles)
        padded = padded_lengths(
            lengths, args.batch_size, args.batch_size * BUCKET_BATCHES, systems["torch fp32"].max_length
        )
        flops = encoder_flops(**sizes, sequence_lengths=padded)["total"]
        measured = measure(systems, texts, titles, args)
    summary = {
        "machine": {**machine(args.threads), "load_average_start": start_load, "load_average_end": os.getloadavg()[0]},
        "config": {k: v for k, v in vars(args).items() if k not in ("out_dir", "from_json")},
        "gemm": gemm,
        "padding": sum(padded) / sum(lengths),
        "systems": summarise(args, measured, compute, flops, gemm),
    }
    summary["command"] = command_line(MODULE, argv)
    markdown = render(summary, summary["command"])
    write_report(args.out_dir / f"backends{suffix}", summary, markdown)
    print(markdown)


if __name__ == "__main__":
    main()
