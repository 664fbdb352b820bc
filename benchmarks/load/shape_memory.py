"""The memory a long-running encoder keeps for the input shapes it has met, with batches padded to
their longest row (as the encoders padded before) and to that length rounded up to a multiple of 8
(``dpr_components/utils/padding.py``, as they pad now).

Each measurement is a fresh process holding glibc's malloc thresholds as ``haystack serve`` does
(``serving/allocator.py``): batches of 10 texts of every length from 5 to 154 words are encoded
with the bundled MiniLM, twice over, and the process's anonymous resident memory is read after each
sweep, once freed memory has been handed back (``malloc_trim``).

    python -m benchmarks.load.shape_memory
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, cpu_name, json_worker, log, report_main
from dpr_components.evaluation.tables import markdown_table

MODULE = "benchmarks.load.shape_memory"
RESULTS = REPO_ROOT / "docs" / "benchmarks" / "load" / "shape_memory"
BACKENDS = ("openvino", "torch")
PADDINGS = {"longest row": 1, "multiple of 8": 8}
ROWS = 10
WORDS = range(5, 155)


def worker(backend: str, multiple: int) -> dict[str, Any]:
    """Two sweeps over :data:`WORDS` in this process: anonymous MB before and after each, and its seconds."""
    from benchmarks.load.server_memory import memory as process_memory
    from dpr_components.serving.allocator import hold_malloc_thresholds, malloc_trim
    from dpr_components.utils import padding

    hold_malloc_thresholds()
    padding.LENGTH_MULTIPLE = multiple
    from dpr_components.encoders.bundled import BUNDLED_MINILM
    from dpr_components.encoders.encoder_settings import EncoderSettings
    from dpr_components.encoders.text_encoder import TextEncoder

    encoder = TextEncoder(EncoderSettings(model=BUNDLED_MINILM, backend=backend), batch_size=32)  # type: ignore[arg-type]
    encoder.encode_passages(["a warm-up"] * ROWS, [None] * ROWS)
    trim = malloc_trim()

    def settled() -> float:
        if trim is not None:
            trim()
        return process_memory(os.getpid())["anon_mb"]

    kept, seconds = [settled()], []
    for _ in range(2):
        start = time.perf_counter()
        for words in WORDS:
            encoder.encode_passages(["river " * words] * ROWS, [None] * ROWS)
        seconds.append(time.perf_counter() - start)
        kept.append(settled())
    shapes = {padding.padded_length(encoder.token_lengths(["river " * w])[0], encoder.max_length) for w in WORDS}
    return {"anonymous_mb": kept, "seconds": seconds, "shapes": len(shapes)}


def run_worker(backend: str, multiple: int) -> dict[str, Any]:
    """:func:`worker` in a fresh process."""
    return json_worker(MODULE, ["--worker", backend, "--multiple", str(multiple)])


def measure(_args: argparse.Namespace) -> dict[str, Any]:
    """Every back end with each padding, in turn."""
    found: dict[str, dict[str, Any]] = {}
    for backend in BACKENDS:
        found[backend] = {}
        for name, multiple in PADDINGS.items():
            result = run_worker(backend, multiple)
            found[backend][name] = result
            grown = result["anonymous_mb"][1] - result["anonymous_mb"][0]
            log(f"{backend}, padded to the {name}: {result['shapes']} lengths, +{grown:.0f} MB")
    return {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "rows": ROWS,
        "words": [WORDS.start, WORDS.stop - 1],
        "runs": found,
    }


def render(summary: dict[str, Any]) -> str:
    """The page: memory kept after each sweep, per back end and padding."""
    rows = []
    for backend, by_padding in summary["runs"].items():
        for name, r in by_padding.items():
            start, first, second = r["anonymous_mb"]
            rows.append(
                [
                    backend,
                    name,
                    str(r["shapes"]),
                    f"{first - start:+.0f}",
                    f"{(first - start) / r['shapes']:.2f}",
                    f"{second - first:+.0f}",
                    f"{r['seconds'][1]:.1f}",
                ]
            )
    columns = ["back end", "padded to", "input shapes", "kept after sweep 1 MB", "MB per shape"]
    table = "\n".join(markdown_table([*columns, "kept after sweep 2 MB", "sweep 2 s"], rows, "llrrrrr"))
    low, high = summary["words"]
    return (
        "# Memory kept per input shape\n\n"
        f"{summary['cpu']}, {summary['cores']} cores. Each row a fresh process with glibc's malloc thresholds held as "
        f"in `haystack serve`: batches of {summary['rows']} texts of each length from {low} to {high} words encoded "
        "with the bundled MiniLM (sweep 1), then the same batches again (sweep 2); the anonymous resident memory "
        "(`RssAnon`) read after each sweep once freed memory was handed back (`malloc_trim`). *longest row*: a "
        "batch padded to its longest row, as before; *multiple of 8*: that length rounded up to a multiple of 8 "
        "(`dpr_components/utils/padding.py`), as now.\n\n"
        f"{table}\n\n"
        "The inference engines keep what they built for each input shape they met, and meeting it again costs "
        "nothing more (sweep 2): the memory is bounded by the number of distinct shapes, which the rounding "
        "divides by about 8. What this does to a served store under load: "
        "[server_memory.md](server_memory.md).\n\n"
        f"Produced by:\n\n```\n{summary['command']}\n```\n"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", choices=BACKENDS, help=argparse.SUPPRESS)
    parser.add_argument("--multiple", type=int, default=8, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=RESULTS, help="report path without suffix")
    parser.add_argument("--from-json", action="store_true", help="re-render the page from its JSON, no measuring")
    arguments = list(argv) if argv is not None else sys.argv[1:]
    parsed = parser.parse_args(arguments)
    if parsed.worker:
        print(json.dumps(worker(parsed.worker, parsed.multiple)))
        return
    report_main(MODULE, parser, arguments, measure, render)


if __name__ == "__main__":
    main()
