"""A background load for benchmarks: encodes passages on a fixed number of torch threads in a loop
until it is stopped; prints ``encoding`` once its first round is done.

    python -m benchmarks.load.background_load --threads 2 --corpus examples/corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.text_encoder import TextEncoder


def passages(corpus: Path) -> tuple[list[str], list[str | None]]:
    """Texts and titles of a JSON-lines corpus (``text``, ``title``)."""
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row["text"] for row in rows], [row.get("title") for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2, help="torch threads of the encoding (default: 2)")
    parser.add_argument("--corpus", default="examples/corpus.jsonl", help="JSON-lines passages to encode")
    parser.add_argument("--model", default=BUNDLED_MINILM, help=f"passage encoder (default: {BUNDLED_MINILM})")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    encoder = TextEncoder(EncoderSettings(model=args.model), batch_size=32)
    texts, titles = passages(Path(args.corpus))
    texts, titles = texts * 4, titles * 4  # batches of 32, well above a question's size
    first = True
    while True:
        encoder.encode_passages(texts, titles)
        if first:
            print("encoding", flush=True)
            first = False


if __name__ == "__main__":
    main()
