"""Markdown rendering of the BM25 benchmark's JSON report."""

from __future__ import annotations

from dpr_components.evaluation.tables import markdown_table, table_header

ENGINE_LABELS = {
    "ours": "ours (BM25Index, Porter)",
    "ours-english": "ours, Snowball English stemmer",
    "lucene": "Lucene (Pyserini 0.22.1)",
    "inmemory": "Haystack InMemoryBM25Retriever",
}
DATASET_LABELS = {"nq": "NQ dev", "squad": "SQuAD dev", "all": "all"}
ACCURACY_TOLERANCE = 0.5  # points
SPEED_TARGET = 5.0  # x Lucene's queries/s


def _label(name: str) -> str:
    return ENGINE_LABELS.get(name, name)


def _accuracy_table(engines: dict[str, dict], datasets: list[str], cutoffs: list[int]) -> list[str]:
    header = ["engine"] + [f"{DATASET_LABELS[d]} top-{k}" for d in datasets for k in cutoffs]
    rows = [
        [_label(name)] + [f"{result['accuracy'][d][f'top{k}']:.1f}" for d in datasets for k in cutoffs]
        for name, result in engines.items()
    ]
    return markdown_table(header, rows, align="l" + "r" * (len(header) - 1))


def _cost_table(engines: dict[str, dict]) -> list[str]:
    rows = [
        [
            _label(name),
            f"{r['num_docs']:,}",
            f"{r['build_seconds']:.1f}",
            f"{r['queries_per_second']:,.1f}",
            f"{r['peak_rss_mb']:,.0f}",
        ]
        for name, r in engines.items()
    ]
    return markdown_table(
        ["engine", "passages", "build (s)", "queries/s (top-100, 1 thread)", "peak RSS (MiB)"], rows, "lrrrr"
    )


def _ratio_lines(ours: dict, other: dict, other_name: str) -> list[str]:
    return [
        f"- queries/s: ours / {other_name} = **{ours['queries_per_second'] / other['queries_per_second']:.1f}x**",
        f"- build time: {other_name} / ours = {other['build_seconds'] / ours['build_seconds']:.2f}x",
        f"- peak RSS: ours / {other_name} = {ours['peak_rss_mb'] / other['peak_rss_mb']:.2f}x",
    ]


def target_checks(report: dict) -> list[dict]:
    """The acceptance targets: top-1/5/20 within 0.5 point of Lucene, and 5x its queries/s."""
    full = report["full"]
    if "lucene" not in full:
        return []
    ours, lucene = full["ours"], full["lucene"]
    checks = []
    for dataset in ("nq", "squad"):
        for k in (1, 5, 20):
            a, b = ours["accuracy"][dataset][f"top{k}"], lucene["accuracy"][dataset][f"top{k}"]
            checks.append(
                {
                    "check": f"{DATASET_LABELS[dataset]} top-{k}",
                    "ours": f"{a:.1f}",
                    "lucene": f"{b:.1f}",
                    "difference": f"{a - b:+.1f}",
                    "target": f"within {ACCURACY_TOLERANCE} point",
                    "met": abs(a - b) <= ACCURACY_TOLERANCE + 1e-9,
                }
            )
    ratio = ours["queries_per_second"] / lucene["queries_per_second"]
    checks.append(
        {
            "check": "queries/s",
            "ours": f"{ours['queries_per_second']:,.0f}",
            "lucene": f"{lucene['queries_per_second']:,.0f}",
            "difference": f"{ratio:.1f}x",
            "target": f">= {SPEED_TARGET:.0f}x",
            "met": ratio >= SPEED_TARGET,
        }
    )
    return checks


def render_markdown(report: dict) -> str:
    cutoffs = report["cutoffs"]
    full, subset = report["full"], report["subset"]
    ours_settings = full["ours"]["settings"]
    lines = [
        "# BM25: embedded index vs Lucene vs Haystack InMemory",
        "",
        "Produced by this command, run from the repository root (after `bash benchmarks/bm25/setup_pyserini.sh`):",
        "",
        "```",
        report["command"].strip(),
        "```",
        "",
        f"Run on {report['date']} on a {report['machine']['cpus']}-core CPU machine without GPU "
        f"({report['machine']['platform']}, Python {report['machine']['python']}). The machine is shared "
        "and noisy: absolute speeds move between runs, so compare the ratios, which come from one run. "
        f"1-minute load average at the start and end of the run: {report['machine'].get('load_average_start')} "
        f"and {report['machine'].get('load_average_end')} (the benchmark itself adds about 1).",
        "",
        "## Setup",
        "",
        f"- Pool: `wiki/documents.jsonl` split into DPR's 100-word passages ({report['pool']['passages']:,}); "
        'every engine indexes `title + "\\n" + text`.',
        f"- Questions: `nq/dev.jsonl` ({report['pool']['questions'].get('nq', 0)}) and `squad/dev.jsonl` "
        f"({report['pool']['questions'].get('squad', 0)}). A question counts at k if the text (not the title) "
        "of one of its top-k passages contains an answer (`has_answer`, DPR's string matching).",
        f"- ours: `dpr_components.document_stores.bm25_index.BM25Index` (bm25s {ours_settings.get('bm25s', '')}, method "
        f"`{ours_settings.get('method')}`, k1={ours_settings.get('k1')}, b={ours_settings.get('b')}, our "
        "Lucene-like English analyzer with PyStemmer's Porter stemmer).",
        "- Lucene: Pyserini 0.22.1 (Anserini, Lucene 9) in its own virtual environment, index built by "
        "`python -m pyserini.index.lucene --collection JsonCollection --generator DefaultLuceneDocumentGenerator "
        "--threads 1 --storeRaw`, searched with `LuceneSearcher` and `set_bm25(0.9, 0.4)`, default English "
        "analyzer (Porter stemming, Lucene's stop words).",
        "- Haystack: `InMemoryDocumentStore` with its defaults (BM25L, k1=1.5, b=0.75, delta=0.5, regex "
        "tokenizer, no stemming) and `InMemoryBM25Retriever`; too slow for the full pool, so it runs on a "
        f"random subset of {report['subset_size']['passages']:,} passages and "
        f"{report['subset_size']['questions']} questions (seed {report['subset_size']['seed']}), and ours is "
        "run again on the same subset.",
        "- Build: from texts in memory to a searchable index (Lucene: the indexing command above, JVM start "
        "included). Queries/s: one thread, top 100, query analysis included, after 100 untimed warm-up "
        f"queries; median of {report['query_repeats']} timed passes over all questions. Peak RSS: the "
        "engine's own process (each engine runs in a separate process; it includes the passages and "
        "questions read from disk; Lucene: the larger of the indexing and the searching process, each a "
        "JVM with its default heap limit).",
        "",
        "## Accuracy on the full pool (%)",
        "",
        *_accuracy_table(full, ["nq", "squad"], cutoffs),
        "",
    ]
    checks = target_checks(report)
    if checks:
        lines += [
            "## Targets",
            "",
            *markdown_table(
                ["check", "ours", "Lucene", "difference", "target", "met"],
                [
                    [c["check"], c["ours"], c["lucene"], c["difference"], c["target"], "yes" if c["met"] else "**no**"]
                    for c in checks
                ],
                "lrrrll",
            ),
            "",
        ]
    elif report["skipped"]["lucene"]:
        lines += ["Lucene was skipped (`--skip-lucene`), so the targets against it were not checked.", ""]
    lines += ["## Speed and memory on the full pool", "", *_cost_table(full), ""]
    if "lucene" in full:
        lines += _ratio_lines(full["ours"], full["lucene"], "Lucene") + [""]
    if subset:
        lines += [
            f"## Ours vs Haystack InMemory on the subset ({report['subset_size']['passages']:,} passages, "
            f"{report['subset_size']['questions']} questions)",
            "",
            "Accuracy on a random subset is not comparable with the full-pool numbers (most gold passages are "
            "left out); it only compares the two engines with each other.",
            "",
            *_accuracy_table(subset, ["all"], cutoffs),
            "",
            *_cost_table(subset),
            "",
            *_ratio_lines(subset["ours"], subset["inmemory"], "InMemory"),
            "",
        ]
    if report["agreement_with_lucene"]:
        lines += [
            "## Ranking agreement with Lucene (full pool, all questions)",
            "",
            *markdown_table(
                ["engine", "same top-1 passage (%)", "top-100 overlap (%)"],
                [
                    [_label(name), f"{a['same_top1']:.1f}", f"{a['overlap_at_100']:.1f}"]
                    for name, a in report["agreement_with_lucene"].items()
                ],
                "lrr",
            ),
            "",
        ]
        ablation = report.get("length_rounding_ablation")
        if ablation:
            lines += [
                "Lucene stores each document length in one byte (exact below 24 terms, then 3 significant "
                "bits) and scores with the rounded length; bm25s uses exact lengths. Ablation "
                "(`benchmarks/bm25/lucene_lengths.py`, same analyzer and BM25 formula, ties to the lower position): "
                f"same top-1 passage as Lucene {ablation['exact_lengths']:.1f}% with exact lengths, "
                f"{ablation['lucene_lengths']:.1f}% with Lucene's rounded lengths.",
                "",
            ]
    if report["analyzer_parity"]:
        lines += [
            "## Analyzer parity with Lucene (all passages and questions)",
            "",
            "Each text is analyzed by our analyzer and by Pyserini's default Lucene analyzer.",
            "",
            *table_header(
                ["stemmer", "texts with identical terms", "terms only ours", "terms only Lucene", "Lucene terms"],
                "lrrrr",
            ),
            *[
                f"| {stemmer} | {p['identical_share'] * 100:.2f}% ({p['identical_texts']:,} / {p['texts']:,}) | "
                f"{p['terms_only_ours']:,} | {p['terms_only_lucene']:,} | {p['lucene_terms']:,} |"
                for stemmer, p in report["analyzer_parity"].items()
            ],
            "",
            "Porter (with Lucene's three departures from the published algorithm re-applied) is kept as the "
            "default: Snowball's English stemmer differs from Lucene on many common words.",
            "",
        ]
    return "\n".join(lines)
