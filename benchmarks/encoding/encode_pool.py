"""Encode the whole passage pool into the embedding cache (resumable; run it in the background).

nohup python benchmarks/encoding/encode_pool.py --model bundled:all-MiniLM-L6-v2 > .cache/encode_pool.log 2>&1 &
"""

from __future__ import annotations

import argparse
import time

from dpr_components.encoders.batch_encoding import cache_for, encode_passages_cached
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.evaluation.pool import pool_passages
from dpr_components.utils.settings import cache_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="bundled:all-MiniLM-L6-v2")
    parser.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    encoder = TextEncoder(EncoderSettings(model=args.model, precision=args.precision), batch_size=args.batch_size)
    passages = pool_passages(args.limit)
    cache = cache_for(encoder, cache_dir() / "embeddings")
    start = time.time()
    encode_passages_cached(encoder, [p.text for p in passages], [p.title for p in passages], cache, show_progress=True)
    print(f"{len(passages)} passages in cache {cache.path} ({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
