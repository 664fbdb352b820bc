"""Encode many passages with an optional resumable cache and a progress bar."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from dpr_components.encoders.embedding_cache import EmbeddingCache, passage_key
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.utils.fault_points import fault_point
from dpr_components.utils.output_folders import EMBEDDING_CACHE, check_output_folder


def cache_for(encoder: TextEncoder, cache_dir: str | Path) -> EmbeddingCache:
    """The cache file of this encoder's vectors inside ``cache_dir`` (a new folder or a cache's, nothing else)."""
    check_output_folder(cache_dir, EMBEDDING_CACHE, replace=False, hint="give a folder of its own for the cache")
    return EmbeddingCache(Path(cache_dir) / f"{encoder.fingerprint()}.sqlite", encoder.dim)


def encode_passages_cached(
    encoder: TextEncoder,
    texts: Sequence[str],
    titles: Sequence[str | None],
    cache: EmbeddingCache | None = None,
    show_progress: bool = False,
) -> np.ndarray:
    """Vectors for all passages; with a cache, only the missing ones are encoded, and each batch
    of the encoder is committed to the cache as soon as it is done (a kill loses one batch)."""
    if cache is None:
        return encoder.encode_passages(list(texts), list(titles), show_progress=show_progress)
    keys = [passage_key(title, text) for title, text in zip(titles, texts, strict=True)]
    out = np.empty((len(texts), encoder.dim), dtype=np.float32)
    found = cache.get(keys)
    missing = []
    for i, key in enumerate(keys):
        if key in found:
            out[i] = found[key]
        else:
            missing.append(i)
    bar = tqdm(
        total=len(texts),
        initial=len(texts) - len(missing),
        unit="passage",
        desc="Encoding passages",
        disable=not show_progress,
        smoothing=0.05,
    )

    def save(positions: np.ndarray, vectors: np.ndarray) -> None:
        cache.put([keys[missing[p]] for p in positions], vectors)
        fault_point("embedding_cache.after_batch")
        bar.update(len(positions))

    if missing:
        out[missing] = encoder.encode_passages([texts[i] for i in missing], [titles[i] for i in missing], on_batch=save)
    bar.close()
    return out
