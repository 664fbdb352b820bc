"""How closely an analyzer reproduces Lucene's term sequences (from ``lucene_worker.py analyze``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence


def compare(
    texts: Sequence[str], lucene_terms: Sequence[list[str]], analyze: Callable[[str], list[str]], examples: int = 10
) -> dict:
    """Share of texts whose term sequence equals Lucene's, and the most frequent differing terms."""
    if len(texts) != len(lucene_terms):
        raise ValueError(f"{len(texts)} texts but {len(lucene_terms)} Lucene analyses")
    identical = 0
    ours_only: Counter[str] = Counter()
    lucene_only: Counter[str] = Counter()
    for text, expected in zip(texts, lucene_terms, strict=True):
        got = analyze(text)
        if got == expected:
            identical += 1
            continue
        got_counts, expected_counts = Counter(got), Counter(expected)
        ours_only.update(got_counts - expected_counts)
        lucene_only.update(expected_counts - got_counts)
    lucene_total = sum(len(terms) for terms in lucene_terms)
    return {
        "texts": len(texts),
        "identical_texts": identical,
        "identical_share": identical / len(texts) if texts else 1.0,
        "lucene_terms": lucene_total,
        "terms_only_ours": sum(ours_only.values()),
        "terms_only_lucene": sum(lucene_only.values()),
        "top_only_ours": ours_only.most_common(examples),
        "top_only_lucene": lucene_only.most_common(examples),
    }
