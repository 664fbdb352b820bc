"""What sleeping idle threads (``OMP_WAIT_POLICY=PASSIVE``) cost batch work: passages encoded per second
with OpenMP's default wait policy (idle threads spin) and with PASSIVE, on the torch and OpenVINO back
ends, each measurement in a fresh process (OpenMP reads the policy once, when it loads), the two
policies taking turns. A question beside batch work is what the policy is for (docs/threads.md); this
is its price for the batch work itself.

    python -m benchmarks.load.wait_policy_batch
    python -m benchmarks.load.wait_policy_batch --repeats 1 --copies 1   # a short check
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, cpu_name, json_worker, log, report_main
from benchmarks.load.background_load import passages
from dpr_components.evaluation.tables import markdown_table
from dpr_components.utils.threads import WAIT_POLICY_ENV

MODULE = "benchmarks.load.wait_policy_batch"
CORPUS = REPO_ROOT / "examples" / "corpus.jsonl"
POLICIES: dict[str, str | None] = {"spin": None, "passive": "PASSIVE"}
BACKENDS = ("torch", "openvino")
RESULTS = REPO_ROOT / "docs" / "benchmarks" / "load" / "wait_policy_batch"


def worker(backend: str, copies: int, threads: int) -> dict[str, float]:
    """Encode examples/corpus.jsonl ``copies`` times on ``threads`` threads after one warm-up batch."""
    import torch

    from dpr_components.encoders.bundled import BUNDLED_MINILM
    from dpr_components.encoders.encoder_settings import EncoderSettings
    from dpr_components.encoders.text_encoder import TextEncoder

    torch.set_num_threads(threads)
    os.environ["DPR_ENCODE_THREADS"] = str(threads)
    encoder = TextEncoder(EncoderSettings(model=BUNDLED_MINILM, backend=backend), batch_size=32)  # type: ignore[arg-type]
    texts, titles = passages(CORPUS)
    encoder.encode_passages(texts[:32], titles[:32])
    texts, titles = texts * copies, titles * copies
    start = time.perf_counter()
    encoder.encode_passages(texts, titles)
    seconds = time.perf_counter() - start
    return {"passages": len(texts), "seconds": seconds, "passages_per_s": len(texts) / seconds}


def run_worker(backend: str, policy: str, copies: int, threads: int) -> dict[str, float]:
    """One measurement in a fresh process with ``policy``'s ``OMP_WAIT_POLICY`` (unset for spin)."""
    env = {key: value for key, value in os.environ.items() if key != WAIT_POLICY_ENV}
    if POLICIES[policy] is not None:
        env[WAIT_POLICY_ENV] = str(POLICIES[policy])
    return json_worker(MODULE, ["--worker", backend, "--copies", str(copies), "--threads", str(threads)], env)


def spread(values: Sequence[float]) -> str:
    """min / median / max, one decimal."""
    return " / ".join(f"{value:.1f}" for value in (min(values), statistics.median(values), max(values)))


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every (repeat, back end, policy) in turn, the policies alternating within each back end."""
    runs: dict[str, dict[str, list[float]]] = {backend: {policy: [] for policy in POLICIES} for backend in BACKENDS}
    for repeat in range(args.repeats):
        for backend in BACKENDS:
            order = list(POLICIES) if repeat % 2 == 0 else list(reversed(POLICIES))
            for policy in order:
                result = run_worker(backend, policy, args.copies, args.threads)
                runs[backend][policy].append(result["passages_per_s"])
                log(f"repeat {repeat + 1}: {backend} {policy}: {result['passages_per_s']:.1f} passages/s")
    return {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "threads": args.threads,
        "passages": args.copies * len(passages(CORPUS)[0]),
        "repeats": args.repeats,
        "runs": runs,
    }


def render(summary: dict[str, Any]) -> str:
    """The page: passages/s per back end and policy, and passive / spin of each repeat."""
    rows = []
    for backend, by_policy in summary["runs"].items():
        ratios = [passive / spin for spin, passive in zip(by_policy["spin"], by_policy["passive"], strict=True)]
        rows.append(
            [backend, spread(by_policy["spin"]), spread(by_policy["passive"]), " / ".join(f"{r:.3f}" for r in ratios)]
        )
    columns = ["back end", "spin texts/s (min / median / max)", "passive texts/s", "passive / spin, each repeat"]
    table = "\n".join(markdown_table(columns, rows, "lrrl"))
    return (
        "# What sleeping idle threads cost batch encoding\n\n"
        f"{summary['cpu']}, {summary['cores']} cores. {summary['passages']:,} texts (examples/corpus.jsonl, repeated) encoded "
        f"with the bundled MiniLM on {summary['threads']} threads, after one warm-up batch, in a fresh process per "
        f"measurement (OpenMP reads `OMP_WAIT_POLICY` once, when it loads); {summary['repeats']} repeats, the two "
        "policies taking turns. *spin*: OpenMP's default (idle threads spin for a while after each parallel "
        "region); *passive*: `OMP_WAIT_POLICY=PASSIVE` (they sleep). A ratio below 1 means the batch is slower "
        "with sleeping threads.\n\n"
        f"{table}\n\n"
        "Why the policy matters for questions: [load.md](load.md) and docs/threads.md.\n\n"
        f"Produced by:\n\n```\n{summary['command']}\n```\n"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=4, help="measurements per back end and policy (default: 4)")
    parser.add_argument("--copies", type=int, default=16, help="times examples/corpus.jsonl is encoded (default: 16)")
    parser.add_argument("--threads", type=int, default=2, help="threads of the encoding (default: 2)")
    parser.add_argument("--worker", choices=BACKENDS, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=RESULTS, help="report path without suffix")
    parser.add_argument("--from-json", action="store_true", help="re-render the page from its JSON, no measuring")
    arguments = list(argv) if argv is not None else sys.argv[1:]
    worker_args = parser.parse_args(arguments)
    if worker_args.worker:
        print(json.dumps(worker(worker_args.worker, worker_args.copies, worker_args.threads)))
        return
    report_main(MODULE, parser, arguments, measure, render, at_least_one=("repeats", "copies", "threads"))


if __name__ == "__main__":
    main()
