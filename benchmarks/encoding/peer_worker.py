"""One sentence-transformers peer in a process of its own, run by the peer environment's Python
(``benchmarks/encoding/peer_env.py``); it imports only the standard library, numpy, torch and
sentence_transformers, never the project.

It loads the model folder with one back end (``SYSTEMS``), making its ONNX or OpenVINO export once
into ``--exports`` (outside any timing), prints ``{"ready": true, ...}`` and then answers JSON lines
on standard input, one a line on standard output:

    {"pairs": [[title, text], ...], "batch_size": 64, "out": "/tmp/chunk.npy"}
        -> the vectors written to ``out`` (float32), answer {"seconds": <time of the encode call>}
    anything it cannot do -> {"error": "..."}; end of input -> exit

Only the protocol goes to standard output: whatever the libraries print goes to standard error.

    python benchmarks/encoding/peer_worker.py --system onnx-fp32 --model MODEL_FOLDER --exports EXPORTS
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

ONNX_QUANTIZATION = ("avx512_vnni", "avx512", "avx2", "arm64")  # sentence-transformers' dynamic int8 configs
PACKAGES = (
    "sentence-transformers",
    "transformers",
    "optimum",
    "optimum-onnx",
    "optimum-intel",
    "onnxruntime",
    "openvino",
    "nncf",
)
STATIC_INT8_FILE = "openvino/openvino_model_qint8_quantized.xml"


def isa_limit_config() -> dict[str, str]:
    """OpenVINO's float precision under an instruction-set limit (``ONEDNN_MAX_CPU_ISA=AVX2``, set by
    ``--isa avx2``): OpenVINO still sees the CPU's bf16 and picks it by default, then finds no bf16
    kernel and cannot compile; f32 is what it picks on a CPU that has only AVX2."""
    return {"INFERENCE_PRECISION_HINT": "f32"} if os.environ.get("ONEDNN_MAX_CPU_ISA") == "AVX2" else {}


def onnx_file(system: str) -> str:
    """The ONNX file of ``system`` inside the export folder (sentence-transformers' own names)."""
    if system == "onnx-fp32":
        return "onnx/model.onnx"
    if system == "onnx-O3":
        return "onnx/model_O3.onnx"
    if system.startswith("onnx-qint8-") and system.removeprefix("onnx-qint8-") in ONNX_QUANTIZATION:
        return f"onnx/model_{dynamic_int8_suffix(system)}.onnx"
    raise ValueError(f"unknown ONNX system {system!r}")


def dynamic_int8_suffix(system: str) -> str:
    """The file suffix of a dynamic int8 export, the same for every config (sentence-transformers' own default
    says qint8 or quint8 after the weights' type)."""
    return f"int8_{system.removeprefix('onnx-qint8-')}"


def export_folder(model: str, exports: Path) -> Path:
    """A copy of the model folder under ``exports`` (per sentence-transformers version) that holds its exports."""
    import sentence_transformers

    folder = exports / f"sentence-transformers-{sentence_transformers.__version__}" / Path(model).name
    if not (folder / "modules.json").is_file():
        shutil.copytree(model, folder, dirs_exist_ok=True)
    return folder


def base_export(folder: Path, backend: str) -> Any:
    """The model on ``backend`` ("onnx" or "openvino"), exported into ``folder`` the first time."""
    from sentence_transformers import SentenceTransformer

    exported = folder / ("onnx/model.onnx" if backend == "onnx" else "openvino/openvino_model.xml")
    model_kwargs = {"ov_config": isa_limit_config()} if backend == "openvino" else None
    model = SentenceTransformer(str(folder), backend=backend, device="cpu", model_kwargs=model_kwargs)
    if not exported.is_file():
        model.save_pretrained(str(folder))
    return model


def make_onnx_export(folder: Path, system: str) -> None:
    """``system``'s ONNX file: the plain export, sentence-transformers' O3 graph optimisation or dynamic int8."""
    from sentence_transformers import export_dynamic_quantized_onnx_model, export_optimized_onnx_model

    if (folder / onnx_file(system)).is_file():
        return
    model = base_export(folder, "onnx")
    if system == "onnx-O3":
        export_optimized_onnx_model(model, "O3", str(folder))
    elif system.startswith("onnx-qint8-"):
        config = system.removeprefix("onnx-qint8-")
        export_dynamic_quantized_onnx_model(model, config, str(folder), file_suffix=dynamic_int8_suffix(system))


def calibration_inputs(model: Any, pairs: list[tuple[str, str]], names: set[str]) -> list[dict[str, np.ndarray]]:
    """Our calibration passages, tokenised one at a time as the model tokenises them: its inputs ``names``."""
    tokenize = getattr(model, "preprocess", model.tokenize)
    return [{name: value.numpy() for name, value in tokenize([pair]).items() if name in names} for pair in pairs]


def make_static_int8(folder: Path, pairs: list[tuple[str, str]]) -> None:
    """OpenVINO static int8, as ``export_static_quantized_openvino_model`` makes it (OVQuantizer, default
    ``OVQuantizationConfig``, the same file name) but calibrated on ``pairs`` instead of a downloaded data set."""
    import nncf
    from optimum.intel.openvino import OVConfig, OVQuantizationConfig, OVQuantizer
    from sentence_transformers.backend.utils import save_or_push_to_hub_model

    if (folder / STATIC_INT8_FILE).is_file():
        return
    if not pairs:
        raise ValueError("openvino-qint8 needs calibration passages (--calibration)")
    model = base_export(folder, "openvino")
    quantizer = OVQuantizer.from_pretrained(model.transformers_model)
    config = OVQuantizationConfig(num_samples=len(pairs))
    names = {port.get_any_name() for port in model.transformers_model.model.inputs}
    dataset = nncf.Dataset(calibration_inputs(model, pairs, names))
    save_or_push_to_hub_model(
        export_function=lambda save_dir: quantizer.quantize(
            dataset, save_directory=save_dir, ov_config=OVConfig(quantization_config=config)
        ),
        export_function_name="export_static_quantized_openvino_model",
        config=config,
        model_name_or_path=str(folder),
        file_suffix="qint8_quantized",
        backend="openvino",
        model=model,
    )


def onnx_kwargs(system: str, threads: int) -> dict[str, Any]:
    """``model_kwargs`` of an ONNX Runtime system: its file, the CPU provider, ``threads`` threads."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return {"file_name": onnx_file(system), "provider": "CPUExecutionProvider", "session_options": options}


def openvino_kwargs(system: str, threads: int) -> dict[str, Any]:
    """``model_kwargs`` of an OpenVINO system: its file, ``threads`` threads and the precision hint (int8
    keeps OpenVINO's default for the products it leaves in float: f32 under an instruction-set limit)."""
    config: dict[str, Any] = {"INFERENCE_NUM_THREADS": threads, **isa_limit_config()}
    if system in ("openvino-f32", "openvino-bf16"):
        config["INFERENCE_PRECISION_HINT"] = system.removeprefix("openvino-")
    file_name = STATIC_INT8_FILE if system == "openvino-qint8" else "openvino/openvino_model.xml"
    return {"file_name": file_name, "ov_config": config}


def load_torch(model: str, system: str) -> Any:
    """sentence-transformers on torch: fp32, or the weights cast to bf16 once."""
    from sentence_transformers import SentenceTransformer

    loaded = SentenceTransformer(model, device="cpu")
    return loaded.to(torch.bfloat16) if system == "torch-bf16" else loaded


def load_exported(model: str, system: str, exports: Path, threads: int, pairs: list[tuple[str, str]]) -> Any:
    """sentence-transformers on ONNX Runtime or OpenVINO, from an export made once under ``exports``."""
    from sentence_transformers import SentenceTransformer

    folder = export_folder(model, exports)
    if system.startswith("onnx-"):
        make_onnx_export(folder, system)
        return SentenceTransformer(str(folder), backend="onnx", device="cpu", model_kwargs=onnx_kwargs(system, threads))
    if system == "openvino-qint8":
        make_static_int8(folder, pairs)
    else:
        base_export(folder, "openvino")
    kwargs = openvino_kwargs(system, threads)
    return SentenceTransformer(str(folder), backend="openvino", device="cpu", model_kwargs=kwargs)


SYSTEMS = (
    "torch-fp32",
    "torch-bf16",
    "onnx-fp32",
    "onnx-O3",
    *(f"onnx-qint8-{config}" for config in ONNX_QUANTIZATION),
    "openvino-f32",
    "openvino-bf16",
    "openvino-qint8",
)


def load_system(model: str, system: str, exports: Path, threads: int, pairs: Sequence[tuple[str, str]] = ()) -> Any:
    """The sentence-transformers model of ``system`` (one of ``SYSTEMS``) on ``threads`` threads."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}: one of {', '.join(SYSTEMS)}")
    torch.set_num_threads(threads)
    if system.startswith("torch-"):
        return load_torch(model, system)
    return load_exported(model, system, exports, threads, list(pairs))


def openvino_precision(model: Any) -> str | None:
    """The precision OpenVINO's compiled model computes its float products in (None off OpenVINO)."""
    compiled = getattr(getattr(model, "transformers_model", None), "request", None)  # optimum's CompiledModel
    if compiled is None:
        return None
    try:
        hint = compiled.get_property("INFERENCE_PRECISION_HINT")
    except (RuntimeError, AttributeError):
        return None
    return hint.to_string() if hasattr(hint, "to_string") else str(hint)


def describe(model: Any) -> dict[str, Any]:
    """What the ready line tells: library versions and, on OpenVINO, the precision it runs."""
    info: dict[str, Any] = {"torch": torch.__version__}
    for package in PACKAGES:
        try:
            info[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    precision = openvino_precision(model)
    if precision is not None:
        info["openvino_inference_precision"] = precision
    return info


def encode_request(model: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Encode the request's ``(title, text)`` pairs, write the vectors to its ``out``; the seconds it took."""
    pairs = [(str(title), str(text)) for title, text in request["pairs"]]
    begin = time.perf_counter()
    vectors = model.encode(pairs, batch_size=int(request["batch_size"]), convert_to_numpy=True, show_progress_bar=False)
    seconds = time.perf_counter() - begin
    np.save(request["out"], np.asarray(vectors, dtype=np.float32))
    return {"seconds": seconds}


def serve(encode: Callable[[dict[str, Any]], dict[str, Any]], requests: IO[str], replies: IO[str]) -> None:
    """Answer every JSON line of ``requests`` with one line on ``replies`` (an error as ``{"error": ...}``)."""
    for line in requests:
        if not line.strip():
            continue
        try:
            reply = encode(json.loads(line))
        except Exception as error:  # noqa: BLE001 - every failure goes back to the caller as a reply
            reply = {"error": f"{type(error).__name__}: {error}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def protocol_stream() -> IO[str]:
    """Standard output kept for the protocol alone: file descriptor 1 then points at standard error."""
    stream = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return stream


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", required=True, choices=SYSTEMS)
    parser.add_argument("--model", required=True, help="a sentence-transformers model folder")
    parser.add_argument("--exports", type=Path, required=True, help="folder for the ONNX and OpenVINO exports")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calibration", type=Path, default=None, help="JSON list of [title, text] (static int8)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    replies = protocol_stream()
    try:
        pairs = json.loads(args.calibration.read_text(encoding="utf-8")) if args.calibration else []
        model = load_system(args.model, args.system, args.exports, args.threads, [tuple(p) for p in pairs])
    except Exception as error:  # noqa: BLE001 - the caller reads why the peer could not start
        replies.write(json.dumps({"ready": False, "error": f"{type(error).__name__}: {error}"}) + "\n")
        replies.flush()
        sys.exit(1)
    replies.write(json.dumps({"ready": True, "system": args.system, "info": describe(model)}) + "\n")
    replies.flush()
    serve(lambda request: encode_request(model, request), sys.stdin, replies)


if __name__ == "__main__":
    main()
