"""Our passage encoding against sentence-transformers at its best: its torch (fp32, bf16 weights), ONNX
Runtime (fp32, O3 graph optimisation, dynamic int8) and OpenVINO (f32, bf16, static int8) back ends,
on the same passages in one run.

The peers run in an environment of their own (``benchmarks.encoding.peer_env``, made on first use),
each in a process of its own (``peer_worker.py``) that keeps its model loaded; ours run in this
process. Every system takes turns ``--chunk`` passages at a time, one computing at a time, as in
``benchmarks.encoding.backends``. Ours: our default (what ``PassageEmbedder()`` runs: ``backend="auto"``,
OpenVINO where it is installed and exact here, else torch), our torch path (precision auto), our
OpenVINO path when the default is not it, and torch fp32 (the reference). Reported: passages/s, our
default and our torch path against each system, each system's cosine to our torch fp32 passage by
passage, whether it keeps the accuracy bound (every passage at cosine >= 0.999), and the fastest peer
that keeps it ("ST best exact").

    python -m benchmarks.encoding.peers                    # docs/benchmarks/encoding/peers.{md,json}
    python -m benchmarks.encoding.peers --isa avx2         # docs/benchmarks/encoding/peers_avx2.{md,json}
    python -m benchmarks.encoding.peers --passages 200 --repeats 1 --out-dir /tmp/peers
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from benchmarks.common import REPO_ROOT, command_line, log, set_threads, write_report
from benchmarks.encoding import peer_env
from benchmarks.encoding.backends import measure, rerun_under_isa
from benchmarks.encoding.encoding_benchmark import cosine_stats
from benchmarks.encoding.limit import backend_label, computes_in, machine, sample_passages
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.model_layout import resolve_model_path
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.evaluation.pool import pool_passages
from dpr_components.evaluation.tables import markdown_table, produced_by
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.utils.settings import cache_dir
from dpr_components.utils.threads import ENCODE_THREADS_ENV

MODULE = "benchmarks.encoding.peers"
WORKER = Path(__file__).with_name("peer_worker.py")
BOUND = 0.999  # every passage's cosine to fp32, as the project keeps a precision (docs/benchmarks/encoding/encoding.md)
GOAL = 1.5  # our default against the fastest exact peer
DEFAULT_PASSAGES, DEFAULT_REPEATS = 1000, 2
OURS_DEFAULT, OURS_TORCH, OURS_OPENVINO, OURS_FP32 = "ours default", "ours torch", "ours OpenVINO", "ours torch fp32"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


class PeerError(RuntimeError):
    """A peer process could not start or answer."""


def onnx_quantization(flags: dict[str, bool], isa: str, arch: str | None = None) -> str:
    """sentence-transformers' dynamic int8 config for this CPU: arm64, avx512_vnni, else avx2."""
    if (arch or platform.machine()).lower() in ("aarch64", "arm64"):
        return "arm64"
    return "avx512_vnni" if isa == "native" and flags.get("avx512_vnni") else "avx2"


def peer_systems(bf16: bool, quantization: str) -> dict[str, tuple[str, str]]:
    """Worker system -> (label, precision its products run in); bf16 ones only where the CPU has native bf16."""
    systems = {
        "torch-fp32": ("ST torch fp32", "fp32"),
        "torch-bf16": ("ST torch bf16 weights", "bf16"),
        "onnx-fp32": ("ST onnx fp32", "fp32"),
        "onnx-O3": ("ST onnx O3 (optimised graph)", "fp32"),
        f"onnx-qint8-{quantization}": (f"ST onnx int8 dynamic ({quantization})", "int8"),
        "openvino-f32": ("ST openvino f32", "fp32"),
        "openvino-bf16": ("ST openvino bf16", "bf16"),
        "openvino-qint8": ("ST openvino int8 static", "int8"),
    }
    return {key: value for key, value in systems.items() if bf16 or value[1] != "bf16"}


class AtBatchSize:
    """A peer process asked for another batch size than the run's."""

    def __init__(self, process: PeerProcess, batch_size: int) -> None:
        self.process, self.batch_size = process, batch_size

    def encode_timed(self, texts: list[str], titles: list[str], _batch_size: int) -> tuple[np.ndarray, float]:
        """As :meth:`PeerProcess.encode_timed`, at this peer's own batch size instead of the run's."""
        return self.process.encode_timed(texts, titles, self.batch_size)


def peer_batch_sizes(value: str, batch_size: int) -> list[int]:
    """The batch sizes peers run at: the run's first, then the others given, each once."""
    try:
        sizes = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise SystemExit(f"--peer-batch-sizes takes comma-separated whole numbers, got {value!r}") from None
    if any(size < 1 for size in sizes):
        raise SystemExit(f"--peer-batch-sizes must be positive, got {value!r}")
    return list(dict.fromkeys([batch_size, *sizes]))


def peer_variants(
    peers: dict[str, tuple[str, str]], processes: dict[str, Any], sizes: Sequence[int], batch_size: int
) -> tuple[dict[str, Any], dict[str, str]]:
    """Every started peer at every batch size: label -> system, label -> precision. A peer at the run's
    batch size keeps its plain label; at another size the label ends with that size."""
    systems: dict[str, Any] = {}
    computes: dict[str, str] = {}
    for key, process in processes.items():
        label, compute = peers[key]
        for size in sizes:
            name = label if size == batch_size else f"{label}, batch {size}"
            systems[name] = process if size == batch_size else AtBatchSize(process, size)
            computes[name] = compute
    return systems, computes


class PeerProcess:
    """A peer worker in the peer environment: its model stays loaded, it encodes chunks on request."""

    def __init__(self, command: Sequence[str], env: dict[str, str], work: Path, key: str) -> None:
        self.key, self.work, self.log = key, work, work / f"{key}.log"
        with open(self.log, "w", encoding="utf-8") as errors:
            self.process = subprocess.Popen(
                list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True,
                cwd=REPO_ROOT, env=env,
            )  # fmt: skip
        ready = self.reply()
        if not ready.get("ready"):
            raise PeerError(f"peer {key} did not start: {ready.get('error')}")
        self.info: dict[str, Any] = ready.get("info", {})

    def reply(self) -> dict[str, Any]:
        """The worker's next line; a ``PeerError`` with the end of its log when it stopped."""
        line = self._stdout().readline()
        if not line:
            tail = self.log.read_text(encoding="utf-8", errors="replace")[-2000:]
            raise PeerError(f"peer {self.key} stopped (exit {self.process.poll()}); its log ends:\n{tail}")
        return json.loads(line)

    def _stdout(self) -> IO[str]:
        assert self.process.stdout is not None
        return self.process.stdout

    def encode_timed(self, texts: list[str], titles: list[str], batch_size: int) -> tuple[np.ndarray, float]:
        """The vectors of the ``(title, text)`` pairs and the seconds the worker's encode call took."""
        out = self.work / f"{self.key}.npy"
        request = {
            "pairs": [[title or "", text] for title, text in zip(titles, texts, strict=True)],
            "batch_size": batch_size,
        }
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({**request, "out": str(out)}) + "\n")
        self.process.stdin.flush()
        answer = self.reply()
        if "error" in answer:
            raise PeerError(f"peer {self.key}: {answer['error']}")
        return np.load(out), float(answer["seconds"])

    def close(self) -> None:
        """End the worker (end of its input), killing it if it does not stop."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def worker_command(python: Path, key: str, args: argparse.Namespace, calibration: Path) -> list[str]:
    """The command that starts the peer ``key``."""
    return [
        str(python), str(WORKER), "--system", key, "--model", str(resolve_model_path(BUNDLED_MINILM)),
        "--exports", str(args.exports.resolve()), "--threads", str(args.threads), "--calibration", str(calibration),
    ]  # fmt: skip


def worker_environment(threads: int) -> dict[str, str]:
    """This process's environment (the ``--isa`` limits included), offline, on ``threads`` threads."""
    return {**os.environ, **OFFLINE, "OMP_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false"}


@contextlib.contextmanager
def started_peers(
    keys: Sequence[str], args: argparse.Namespace, work: Path, calibration: list[Any], failed: dict[str, str]
) -> Iterator[dict]:
    """Every peer ``keys`` started in turn (each makes its exports first), all ended on the way out; a peer
    that cannot start is left out, its reason (first line) put in ``failed``."""
    python = args.peer_python or peer_env.create()
    calibration_file = work / "calibration.json"
    calibration_file.write_text(json.dumps(calibration), encoding="utf-8")
    peers: dict[str, PeerProcess] = {}
    try:
        for key in keys:
            log(f"starting peer {key} (its first start exports the model)")
            command = worker_command(python, key, args, calibration_file)
            try:
                peers[key] = PeerProcess(command, worker_environment(args.threads), work, key)
            except PeerError as error:
                failed[key] = f"could not start: {' '.join(str(error).split())[:400]}"
                log(failed[key])
        yield peers
    finally:
        for peer in peers.values():
            peer.close()


def our_systems(batch_size: int) -> tuple[dict[str, TextEncoder], dict[str, str]]:
    """Our default (``PassageEmbedder()``'s settings: backend auto), our torch path (precision auto), our
    OpenVINO path when auto did not resolve to it, and torch fp32 (the reference); the precision each
    computes in."""
    settings = {
        OURS_DEFAULT: EncoderSettings(model=BUNDLED_MINILM, backend="auto"),
        OURS_TORCH: EncoderSettings(model=BUNDLED_MINILM, backend="torch"),
        OURS_OPENVINO: EncoderSettings(model=BUNDLED_MINILM, backend="openvino"),
        OURS_FP32: EncoderSettings(model=BUNDLED_MINILM, backend="torch", precision="fp32"),
    }
    default = TextEncoder(settings[OURS_DEFAULT], batch_size=batch_size)
    names = our_system_names(default.backend)
    systems = {name: default if name == OURS_DEFAULT else TextEncoder(settings[name], batch_size) for name in names}
    for encoder in systems.values():
        encoder.load()
    return systems, {name: computes_in(encoder) for name, encoder in systems.items()}


def our_system_names(default_backend: str) -> list[str]:
    """Our systems to measure: ours OpenVINO only when the default (backend auto) is not already it."""
    names = [OURS_DEFAULT, OURS_TORCH, OURS_OPENVINO, OURS_FP32]
    return [name for name in names if name != OURS_OPENVINO or default_backend != "openvino"]


def default_backend(encoder: TextEncoder, computes: str) -> dict[str, str]:
    """What backend auto resolved to for our default, why, the precision it computes in and the
    OpenVINO version installed."""
    try:
        openvino = importlib.metadata.version("openvino")
    except importlib.metadata.PackageNotFoundError:
        openvino = "not installed"
    return {
        "backend": encoder.backend,
        "reason": encoder.backend_choice().reason,
        "computes": computes,
        "openvino": openvino,
        "request_rows": str(encoder.rows_per_batch),
    }


def system_rows(
    seconds: dict[str, float], vectors: dict[str, np.ndarray], computes: dict[str, str], repeats: int
) -> list[dict[str, Any]]:
    """Per system: passages/s over all repeats, cosine to our fp32 and whether every passage keeps the bound."""
    reference = vectors[OURS_FP32]
    rows = []
    for name, spent in seconds.items():
        cosine = cosine_stats(reference, vectors[name])
        rows.append({
            "system": name,
            "kind": "ours" if name.startswith("ours") else "peer",
            "computes": computes[name],
            "passages_per_s": len(reference) * repeats / spent,
            "cosine_to_ours_fp32": cosine,
            "within_bound": cosine["min"] >= BOUND,
        })  # fmt: skip
    return rows


def best_exact(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The fastest peer that keeps the accuracy bound (None when none does)."""
    exact = [row for row in rows if row["kind"] == "peer" and row["within_bound"]]
    return max(exact, key=lambda row: row["passages_per_s"], default=None)


def headline(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """ST best exact, our default's ratio to it, and whether that meets ``GOAL``."""
    best = best_exact(rows)
    ours = next(row for row in rows if row["system"] == OURS_DEFAULT)
    ratio = None if best is None else ours["passages_per_s"] / best["passages_per_s"]
    return {
        "st_best_exact": None if best is None else best["system"],
        "st_best_exact_passages_per_s": None if best is None else best["passages_per_s"],
        "ours_default_passages_per_s": ours["passages_per_s"],
        "ratio_ours_default_to_st_best_exact": ratio,
        "goal": GOAL,
        "goal_met": None if ratio is None else ratio >= GOAL,
    }


def ratio_cell(ours: float, other: float) -> str:
    return f"{ours / other:.2f}x"


def result_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per system: rate, our default and torch paths against it, cosine, the bound."""
    rate = {row["system"]: row["passages_per_s"] for row in rows}
    body = [
        [
            row["system"], row["computes"], f"{row['passages_per_s']:.1f}",
            ratio_cell(rate[OURS_DEFAULT], row["passages_per_s"]), ratio_cell(rate[OURS_TORCH], row["passages_per_s"]),
            f"{row['cosine_to_ours_fp32']['min']:.5f}", f"{row['cosine_to_ours_fp32']['mean']:.5f}",
            "yes" if row["within_bound"] else "no",
        ]
        for row in rows
    ]  # fmt: skip
    header = ["system", "computes in", "passages/s", "ours default ÷", "ours torch ÷", "cosine min", "mean", "exact"]
    return markdown_table(header, body, "llrrrrrl")


def headline_text(result: dict[str, Any], default: dict[str, str]) -> str:
    """The headline as a sentence; ``default``: what our default ran on."""
    if result["st_best_exact"] is None:
        return "No peer kept the accuracy bound: there is no ST best exact in this run."
    verdict = "met" if result["goal_met"] else "not met"
    return (
        f"**ST best exact: {result['st_best_exact']}**, {result['st_best_exact_passages_per_s']:.1f} passages/s. "
        f"Our default ({backend_label(default['backend'])}, {default['computes']}): "
        f"{result['ours_default_passages_per_s']:.1f} passages/s, "
        f"**{result['ratio_ours_default_to_st_best_exact']:.2f}x** ST best exact (goal {GOAL}x: {verdict})."
    )


def ours_text(default: dict[str, str]) -> str:
    """What each of our systems is, with what backend auto resolved to here."""
    resolved = (
        f"*Ours default* is what `PassageEmbedder()` runs here: backend auto, which resolved to "
        f"**{backend_label(default['backend'])}** ({default['reason']}), computing in {default['computes']}"
    )
    if default["backend"] == "openvino":
        resolved += " with one stream per thread"
        if "request_rows" in default:  # runs from before the ring of requests do not have it
            resolved += f", batches of {default['request_rows']} rows queued on them"
    torch_path = (
        '*ours torch* is `PassageEmbedder(backend="torch")` (precision auto: bf16 weights where the CPU has native '
        "bf16, else fp32), the default before backend auto"
    )
    parts = [resolved, torch_path]
    if default["backend"] != "openvino":
        parts.append('*ours OpenVINO* is `PassageEmbedder(backend="openvino")` (precision auto)')
    return "; ".join(parts) + "; *ours torch fp32* is the reference of the cosines."


def versions_text(peer_info: dict[str, Any]) -> str:
    """The peers' library versions, as their workers reported them."""
    return ", ".join(f"{name} {version}" for name, version in peer_info.items()) or "not reported"


def peer_sizes_text(config: dict[str, Any]) -> str:
    """Which other batch sizes the peers ran at (runs from before the option: none)."""
    sizes = peer_batch_sizes(config.get("peer_batch_sizes", ""), config["batch_size"])
    others = [size for size in sizes if size != config["batch_size"]]
    if not others:
        return ""
    sizes = ", ".join(str(size) for size in others)
    return (
        f" Every peer also runs at batch size {sizes} (rows ending in the size), so that its best batch size "
        "is among its rows; ours run at the batch size above, as `PassageEmbedder()` does."
    )


def smoke_note(config: dict[str, Any]) -> str:
    """A warning line when the run is shorter than the defaults."""
    if config["passages"] >= DEFAULT_PASSAGES and config["repeats"] >= DEFAULT_REPEATS:
        return ""
    return (
        f"\n**A short run** ({config['passages']} passages, {config['repeats']} repeat(s); the defaults are "
        f"{DEFAULT_PASSAGES} and {DEFAULT_REPEATS}): a check that every system runs, not a measurement.\n"
    )


def render(summary: dict[str, Any], command: str) -> str:
    """The markdown report, from ``peers.md.template``."""
    env, config = summary["machine"], summary["config"]
    values = {
        "isa_title": " (AVX2 only)" if config["isa"] == "avx2" else "",
        "command": command,
        "date": env["date"],
        "smoke_note": smoke_note(config),
        "cpu": env["cpu"],
        "cores": env["cores"],
        "threads": env["threads"],
        "flags": ", ".join(f"{flag} {'yes' if present else 'no'}" for flag, present in env["flags"].items()),
        "isa": config["isa"],
        "native_bf16": "yes" if env["native_bf16"] else "no",
        "load_start": f"{env['load_average_start']:.2f}",
        "load_end": f"{env['load_average_end']:.2f}",
        "torch": env["torch"],
        "openvino": summary["ours_default"]["openvino"],
        "ours": ours_text(summary["ours_default"]),
        "peer_versions": versions_text(summary["peer_versions"]),
        "passages": config["passages"],
        "seed": config["seed"],
        "batch_size": config["batch_size"],
        "peer_batch_sizes": peer_sizes_text(config),
        "repeats": config["repeats"],
        "chunk": config["chunk"],
        "calibration": config["calibration"],
        "bound": BOUND,
        "headline": headline_text(summary["headline"], summary["ours_default"]),
        "table": "\n".join(result_table(summary["systems"])),
        "skipped": "\n".join(f"- {key}: {why}" for key, why in summary["skipped"].items()) or "- none",
        "avx2_note": AVX2_NOTE if config["isa"] == "avx2" else "",
        "produced_by": "\n".join(produced_by(command)),
    }
    return fill_template(sibling_template(__file__, "peers.md.template"), values)


AVX2_NOTE = (
    "\n`--isa avx2`: oneDNN (the kernels of torch and OpenVINO) and MKL were limited to AVX2, in this process "
    "and in every peer's, as on a CPU without AVX-512. ONNX Runtime picks its kernels from the CPU's flags "
    "itself, so its rows still ran AVX-512 code: they are not AVX2-only figures.\n"
)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=DEFAULT_PASSAGES)
    parser.add_argument("--calibration", type=int, default=300, help="other pool passages for OpenVINO static int8")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--peer-batch-sizes",
        default="64,16",
        help="comma-separated batch sizes every peer also runs at (its rows name the size when not --batch-size)",
    )
    parser.add_argument("--chunk", type=int, default=250, help="passages per turn")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--isa", choices=["native", "avx2"], default="native")
    parser.add_argument("--peers", default=None, help="comma-separated worker systems to run (default: all)")
    parser.add_argument(
        "--peer-python", type=Path, default=None, help="default: the peer environment's, made if needed"
    )
    parser.add_argument("--exports", type=Path, default=cache_dir() / "peer_exports", help="ONNX/OpenVINO exports")
    parser.add_argument("--out-dir", type=Path, default=REPO_ROOT / "docs" / "benchmarks" / "encoding")
    parser.add_argument("--from-json", action="store_true", help="render the report again from its JSON")
    return parser.parse_args(argv)


def chosen_peers(args: argparse.Namespace, bf16: bool, flags: dict[str, bool]) -> tuple[dict, dict[str, str]]:
    """The peers to run (worker system -> label, precision) and those left out, with the reason."""
    systems = peer_systems(bf16, onnx_quantization(flags, args.isa))
    skipped = {}
    if not bf16:
        skipped["torch-bf16, openvino-bf16"] = "this CPU (or the --isa limit) has no native bf16"
    if args.peers:
        wanted = set(args.peers.split(","))
        unknown = wanted - set(systems)
        if unknown:
            raise SystemExit(f"unknown or unavailable peers {sorted(unknown)}: choose from {', '.join(systems)}")
        skipped.update({key: "not chosen (--peers)" for key in systems if key not in wanted})
        systems = {key: value for key, value in systems.items() if key in wanted}
    return systems, skipped


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure every system; the report's data."""
    sizes = peer_batch_sizes(args.peer_batch_sizes, args.batch_size)
    set_threads(args.threads)
    os.environ[ENCODE_THREADS_ENV] = str(args.threads)  # our OpenVINO path: the same threads as the rest
    env = machine(args.threads)
    chosen = sample_passages(pool_passages(), args.passages + args.calibration, args.seed)
    measured, calibration = chosen[: args.passages], chosen[args.passages :]
    texts, titles = [p.text for p in measured], [p.title or "" for p in measured]
    ours, computes = our_systems(args.batch_size)
    default = default_backend(ours[OURS_DEFAULT], computes[OURS_DEFAULT])
    log(f"ours default: backend auto resolved to {default['backend']} ({default['reason']})")
    peers, skipped = chosen_peers(args, env["native_bf16"], env["flags"])
    with tempfile.TemporaryDirectory(prefix="peers-") as work:
        pairs = [[p.title or "", p.text] for p in calibration]
        with started_peers(list(peers), args, Path(work), pairs, skipped) as processes:
            variants, variant_computes = peer_variants(peers, processes, sizes, args.batch_size)
            systems: dict[str, Any] = {**ours, **variants}
            computes.update(variant_computes)
            result = measure(systems, texts, titles, args)
            info = next(iter(processes.values())).info if processes else {}
    rows = system_rows(result["seconds"], result["vectors"], computes, args.repeats)
    env["load_average_end"] = os.getloadavg()[0]
    config = {
        k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k not in ("out_dir", "from_json")
    }
    return {
        "machine": env,
        "config": {**config, "exports": "the cache folder", "peer_python": "the peer environment's"},
        "ours_default": default,
        "peer_versions": {k: v for k, v in info.items() if k != "openvino_inference_precision"},
        "skipped": skipped,
        "systems": rows,
        "headline": headline(rows),
    }


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    out = args.out_dir / ("peers" if args.isa == "native" else f"peers_{args.isa}")
    if args.from_json:
        summary = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
        write_report(out, summary, render(summary, summary["command"]))
        return
    rerun_under_isa(args.isa, MODULE, argv)
    summary = run(args)
    summary["command"] = command_line(MODULE, argv)
    markdown = render(summary, summary["command"])
    write_report(out, summary, markdown)
    print(markdown)


if __name__ == "__main__":
    main()
