"""Fixed passage vectors for training the question encoder alone ("query-side fine-tuning").

With ``train_passage_encoder: false`` the passage encoder E_P keeps its weights: every passage a
batch holds is encoded by :class:`~dpr_components.encoders.text_encoder.TextEncoder` — the code that indexes a
store, so training sees exactly the vectors the index holds — once, before the first step, and the
steps look the vectors up. Why it is worth a mode of its own:

* a store of 21M passages costs days of CPU to re-encode (docs/scale.md); a question encoder
  trained against the E_P that built it needs no re-indexing;
* a step runs E_Q only on short questions, many times faster than a step of both encoders
  (measured in docs/training/dpr_nq.md).

Vectors of the positives and hard negatives are encoded up front (and cached in the embedding
cache the indexer uses, so a corpus encoded for an index is not encoded again); any other
passage a batch draws (random negatives) is encoded when first met and kept."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import torch

from dpr_components.dpr_data.examples import Ctx, TrainingExample
from dpr_components.encoders.batch_encoding import cache_for, encode_passages_cached
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.text_encoder import TextEncoder


def _key(ctx: Ctx) -> tuple[str, str]:
    return (ctx.title or "", ctx.text)


class FrozenPassageVectors:
    """``Ctx -> vector`` from a fixed passage encoder; :meth:`lookup` returns a batch's matrix."""

    def __init__(
        self, settings: EncoderSettings, cache_folder: str | Path | None = None, show_progress: bool = True
    ) -> None:
        self.encoder = TextEncoder(settings)
        self.encoder.load()
        self.cache = cache_for(self.encoder, cache_folder) if cache_folder is not None else None
        self.show_progress = show_progress
        self._rows: dict[tuple[str, str], int] = {}
        # Grown by doubling, so passages met one batch at a time do not copy the table each time.
        self._vectors = np.empty((1024, self.encoder.dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, contexts: Iterable[Ctx]) -> None:
        """Encode the passages not seen yet (through the cache when there is one)."""
        new: dict[tuple[str, str], Ctx] = {}
        for ctx in contexts:
            key = _key(ctx)
            if key not in self._rows and key not in new:
                new[key] = ctx
        if not new:
            return
        ctxs = list(new.values())
        vectors = encode_passages_cached(
            self.encoder,
            [c.text for c in ctxs],
            [c.title or None for c in ctxs],
            self.cache,
            show_progress=self.show_progress and len(ctxs) > 256,
        )
        start, end = len(self._rows), len(self._rows) + len(ctxs)
        if end > len(self._vectors):
            grown = np.empty((max(end, 2 * len(self._vectors)), self.encoder.dim), dtype=np.float32)
            grown[:start] = self._vectors[:start]
            self._vectors = grown
        self._vectors[start:end] = vectors
        self._rows.update({key: start + i for i, key in enumerate(new)})

    def add_examples(self, examples: Sequence[TrainingExample]) -> None:
        """Every positive and hard negative of ``examples``."""
        self.add(ctx for example in examples for ctx in (*example.positives, *example.hard_negatives))

    def lookup(self, passages: Sequence[Ctx]) -> torch.Tensor:
        """The vectors of ``passages`` in order, as a tensor without gradient."""
        self.add(passages)
        rows = np.fromiter((self._rows[_key(c)] for c in passages), dtype=np.int64, count=len(passages))
        return torch.from_numpy(self._vectors[rows])


def check_same_vectors(
    own: str, same_as: str, texts: Sequence[tuple[str | None, str]], tolerance: float = 1e-4
) -> None:
    """Raise unless passage encoder ``same_as`` makes the vectors ``own`` makes for ``(title, text)``
    passages, as the fixed passage encoder of a question-side run and the copy its run exported do."""
    encoders = [TextEncoder(EncoderSettings(model=m), batch_size=64) for m in (own, same_as)]
    a, b = (e.encode_passages([t for _, t in texts], [title for title, _ in texts]) for e in encoders)
    difference = float(np.abs(a - b).max()) if len(texts) else 0.0
    if a.shape != b.shape or difference > tolerance:
        raise ValueError(
            f"passage encoder {same_as} does not make the vectors of {own} "
            f"(largest difference {difference:.2g} on {len(texts)} passages)"
        )
