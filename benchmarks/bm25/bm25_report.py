"""Markdown rendering of the BM25 benchmark's JSON report. Accuracies get a bootstrap interval over
questions and each ours − Lucene difference a paired-bootstrap interval and McNemar's exact test, from
the per-question first-hit ranks the JSON keeps; an older JSON without them gets Wilson intervals on
its accuracies and untested differences."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dpr_components.evaluation.intervals import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    McNemarResult,
    PairedDifference,
    mcnemar,
    paired_bootstrap_difference,
    score_interval,
    wilson_interval,
)
from dpr_components.evaluation.metric_intervals import difference_cell, hits_at, interval_cell
from dpr_components.evaluation.tables import markdown_table, table_header
from dpr_components.evaluation.templates import fill_template, sibling_template

ENGINE_LABELS = {
    "ours": "ours (BM25Index, Porter)",
    "ours-english": "ours, Snowball English stemmer",
    "lucene": "Lucene (Pyserini 0.22.1)",
    "inmemory": "Haystack InMemoryBM25Retriever",
}
DATASET_LABELS = {"nq": "NQ dev", "squad": "SQuAD dev", "all": "all"}
ACCURACY_TOLERANCE = 0.5  # points
ACCURACY_TARGET_CUTOFFS = (1, 5, 20)
SPEED_TARGET = 5.0  # x Lucene's queries/s
WILSON_MARK = "ʷ"
PARITY_SHOWN = f"yes: interval within ±{ACCURACY_TOLERANCE}"
ESTIMATE_ONLY = f"estimate only: interval exceeds ±{ACCURACY_TOLERANCE}"
ESTIMATE_ONLY_UNTESTED = "estimate only: not tested"


def _label(name: str) -> str:
    return ENGINE_LABELS.get(name, name)


def first_hit_ranks(result: dict, dataset: str) -> list[int | None] | None:
    """An engine's per-question first-hit ranks on ``dataset`` (``all``: every dataset in turn), or
    None when the JSON kept only accuracies."""
    stored = result.get("first_hit_ranks")
    if stored is None:
        return None
    if dataset == "all":
        return [rank for ranks in stored.values() for rank in ranks]
    return stored.get(dataset)


def _question_count(result: dict, dataset: str) -> int:
    counts = result["questions"]
    return int(sum(counts.values()) if dataset == "all" else counts[dataset])


def accuracy_cell(result: dict, dataset: str, k: int) -> str:
    """``63.8 [60.2, 67.5]``: top-k accuracy (%) with its bootstrap interval over questions, or with a
    Wilson interval (marked ʷ) when the per-question ranks were not stored."""
    ranks = first_hit_ranks(result, dataset)
    if ranks is not None:
        return interval_cell(score_interval(hits_at(ranks, k)).scaled(100), name_method=True)
    accuracy = result["accuracy"][dataset][f"top{k}"] / 100
    return interval_cell(wilson_interval(accuracy, _question_count(result, dataset)).scaled(100)) + WILSON_MARK


@dataclass(frozen=True)
class Comparison:
    """One engine minus a reference engine at top-k on one question set, in points: the paired
    bootstrap interval and McNemar's test when both kept per-question ranks, else only the estimate."""

    estimate: float
    difference: PairedDifference | None = None
    test: McNemarResult | None = None

    def cell(self) -> str:
        """``+0.3 [-0.5, +1.1] —, p=0.51``, or ``+0.3 (not tested)``."""
        if self.difference is None:
            return f"{self.estimate:+.1f} (not tested)"
        return difference_cell(self.difference, self.test)

    def parity(self, tolerance: float = ACCURACY_TOLERANCE) -> str:
        """Whether the engines agree within ``tolerance`` points: shown when the whole interval lies
        within it, the estimate only when the interval reaches past it (or was not computed), else no."""
        if abs(self.estimate) > tolerance + 1e-9:
            return "**no**"
        if self.difference is None:
            return ESTIMATE_ONLY_UNTESTED
        interval = self.difference.interval
        return PARITY_SHOWN if -tolerance <= interval.low and interval.high <= tolerance else ESTIMATE_ONLY


def compare(new: dict, reference: dict, dataset: str, k: int) -> Comparison:
    """``new`` − ``reference`` top-k accuracy on ``dataset``, paired over the same questions."""
    estimate = new["accuracy"][dataset][f"top{k}"] - reference["accuracy"][dataset][f"top{k}"]
    ranks, reference_ranks = first_hit_ranks(new, dataset), first_hit_ranks(reference, dataset)
    if ranks is None or reference_ranks is None:
        return Comparison(estimate)
    hits, reference_hits = hits_at(ranks, k), hits_at(reference_ranks, k)
    difference = paired_bootstrap_difference(hits, reference_hits).scaled(100)
    return Comparison(difference.interval.estimate, difference, mcnemar(hits, reference_hits))


def _has_ranks(engines: dict[str, dict]) -> bool:
    return all(result.get("first_hit_ranks") is not None for result in engines.values())


def _accuracy_table(
    engines: dict[str, dict], dataset: str, cutoffs: Sequence[int], reference: str | None, reference_label: str
) -> list[str]:
    """One question set: every engine's accuracy cells, then each engine minus ``reference``."""
    header = ["engine"] + [f"top-{k}" for k in cutoffs]
    rows = [[_label(name)] + [accuracy_cell(result, dataset, k) for k in cutoffs] for name, result in engines.items()]
    if reference is not None:
        rows += [
            [f"{_label(name)} − {reference_label}"]
            + [compare(result, engines[reference], dataset, k).cell() for k in cutoffs]
            for name, result in engines.items()
            if name != reference
        ]
    return markdown_table(header, rows, align="l" + "r" * len(cutoffs))


def interval_notes(engines: dict[str, dict], reference_label: str) -> list[str]:
    """The sentences that say what the brackets and the difference rows are."""
    if _has_ranks(engines):
        return [
            f"Cells: top-k accuracy in percent with its {DEFAULT_CONFIDENCE:.0%} percentile-bootstrap interval "
            f"over questions ({DEFAULT_RESAMPLES:,} resamples, seed 0). Rows *X − {reference_label}*: X minus "
            f"{reference_label} on the same questions with its paired-bootstrap interval, *gain* or *loss* when "
            "the interval excludes zero (— when it does not), and McNemar's exact p.",
            "",
        ]
    return [
        f"{WILSON_MARK} The JSON kept only the accuracies, not the per-question ranks: cells have a "
        f"{DEFAULT_CONFIDENCE:.0%} Wilson score interval of the proportion (Wilson 1927) instead of a bootstrap "
        f"over questions, and the differences from {reference_label} are not tested.",
        "",
    ]


def _accuracy_section(
    engines: dict[str, dict], datasets: Sequence[str], cutoffs: Sequence[int], reference: str | None, label: str
) -> list[str]:
    """The interval notes, then one accuracy table per question set (with a heading when several)."""
    lines = interval_notes(engines, label)
    for dataset in datasets:
        if len(datasets) > 1:
            questions = _question_count(next(iter(engines.values())), dataset)
            lines += [f"### {DATASET_LABELS[dataset]} ({questions:,} questions)", ""]
        lines += [*_accuracy_table(engines, dataset, cutoffs, reference, label), ""]
    return lines


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
    """The acceptance targets: top-1/5/20 within 0.5 point of Lucene, and 5x its queries/s. An
    accuracy target counts as met only when the paired interval of the difference lies within ±0.5."""
    full = report["full"]
    if "lucene" not in full:
        return []
    ours, lucene = full["ours"], full["lucene"]
    checks = []
    for dataset in ("nq", "squad"):
        for k in ACCURACY_TARGET_CUTOFFS:
            comparison = compare(ours, lucene, dataset, k)
            checks.append(
                {
                    "check": f"{DATASET_LABELS[dataset]} top-{k}",
                    "ours": accuracy_cell(ours, dataset, k),
                    "lucene": accuracy_cell(lucene, dataset, k),
                    "difference": comparison.cell(),
                    "target": f"within ±{ACCURACY_TOLERANCE} point",
                    "met": comparison.parity(),
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
            "met": "yes" if ratio >= SPEED_TARGET else "**no**",
        }
    )
    return checks


def parity_summary(checks: Sequence[dict]) -> list[str]:
    """Which accuracy targets the intervals support, and which only their point estimates meet."""
    accuracy = [c for c in checks if c["check"] != "queries/s"]
    shown = [c["check"] for c in accuracy if c["met"] == PARITY_SHOWN]
    estimate_only = [c["check"] for c in accuracy if c["met"] in (ESTIMATE_ONLY, ESTIMATE_ONLY_UNTESTED)]
    missed = [c["check"] for c in accuracy if c["met"] == "**no**"]
    tolerance = f"±{ACCURACY_TOLERANCE}"
    sentences = [
        f"An accuracy target is met (parity shown) only when the whole {DEFAULT_CONFIDENCE:.0%} paired interval "
        f"of ours − Lucene lies within {tolerance} point; a point estimate within {tolerance} whose interval "
        "reaches further does not show parity, it only fails to show a difference."
    ]
    if shown:
        sentences.append(f"Parity within {tolerance} is shown by the interval for {', '.join(shown)}.")
    if estimate_only:
        sentences.append(
            f"Only the point estimate lies within {tolerance} for {', '.join(estimate_only)}: parity within "
            f"{tolerance} is not shown there."
        )
    if missed:
        sentences.append(f"The point estimate lies outside {tolerance} for {', '.join(missed)}.")
    return [" ".join(sentences), ""]


def _run_conditions(report: dict) -> str:
    """How the run was started (niceness, thread variables), when the JSON records it."""
    environment = report.get("environment")
    if not environment:
        return ""
    parts = []
    if environment.get("nice"):
        parts.append(f"`nice -n {environment['nice']}`")
    parts += [f"`{name}={value}`" for name, value in environment.get("variables", {}).items()]
    return f" It ran under {' and '.join(parts)}." if parts else ""


def _rerendered(command: str | None) -> list[str]:
    """The line naming a re-render from the JSON, when this is one."""
    return [f"Re-rendered from `bm25.json`, nothing measured again, by `{command}`.", ""] if command else []


INTRO_TEMPLATE = sibling_template(__file__, "bm25_report.md.template")


def render_markdown(report: dict, rerendered_by: str | None = None) -> str:
    """The whole report; ``rerendered_by`` names the command of a re-render from the JSON."""
    lines = [
        fill_template(INTRO_TEMPLATE, intro_values(report, rerendered_by)),
        *_accuracy_section(
            report["full"], ["nq", "squad"], report["cutoffs"], _peer(report["full"], "lucene"), "Lucene"
        ),
        *_targets_section(report),
        *["## Speed and memory on the full pool", "", *_cost_table(report["full"]), ""],
    ]
    if "lucene" in report["full"]:
        lines += [*_ratio_lines(report["full"]["ours"], report["full"]["lucene"], "Lucene"), ""]
    lines += _subset_section(report) + _agreement_section(report) + _analyzer_section(report)
    return "\n".join(lines)


def _peer(results: dict, name: str) -> str | None:
    return name if name in results else None


def intro_values(report: dict, rerendered_by: str | None) -> dict[str, object]:
    """The placeholders of the report's title, command, machine and setup."""
    machine, ours = report["machine"], report["full"]["ours"]["settings"]
    rerendered = _rerendered(rerendered_by)
    return {
        "command": report["command"].strip(),
        "rerendered": "".join(f"{line}\n" for line in rerendered),
        "date": report["date"],
        "cpus": machine["cpus"],
        "platform": machine["platform"],
        "python": machine["python"],
        "load_start": machine.get("load_average_start"),
        "load_end": machine.get("load_average_end"),
        "run_conditions": _run_conditions(report),
        "passages": f"{report['pool']['passages']:,}",
        "nq_questions": report["pool"]["questions"].get("nq", 0),
        "squad_questions": report["pool"]["questions"].get("squad", 0),
        "bm25s": ours.get("bm25s", ""),
        "method": ours.get("method"),
        "k1": ours.get("k1"),
        "b": ours.get("b"),
        "subset_passages": f"{report['subset_size']['passages']:,}",
        "subset_questions": report["subset_size"]["questions"],
        "seed": report["subset_size"]["seed"],
        "query_repeats": report["query_repeats"],
    }


def _targets_section(report: dict) -> list[str]:
    checks = target_checks(report)
    if checks:
        return [
            "## Targets",
            "",
            *markdown_table(
                ["check", "ours", "Lucene", "ours − Lucene", "target", "met"],
                [[c["check"], c["ours"], c["lucene"], c["difference"], c["target"], c["met"]] for c in checks],
                "lrrrll",
            ),
            "",
            *parity_summary(checks),
        ]
    if report["skipped"]["lucene"]:
        return ["Lucene was skipped (`--skip-lucene`), so the targets against it were not checked.", ""]
    return []


def _subset_section(report: dict) -> list[str]:
    subset = report["subset"]
    if not subset:
        return []
    return [
        f"## Ours vs Haystack InMemory on the subset ({report['subset_size']['passages']:,} passages, "
        f"{report['subset_size']['questions']} questions)",
        "",
        "Accuracy on a random subset is not comparable with the full-pool numbers (most gold passages are "
        "left out); it only compares the two engines with each other.",
        "",
        *_accuracy_section(subset, ["all"], report["cutoffs"], _peer(subset, "inmemory"), "InMemory"),
        *_cost_table(subset),
        "",
        *_ratio_lines(subset["ours"], subset["inmemory"], "InMemory"),
        "",
    ]


def _agreement_section(report: dict) -> list[str]:
    if not report["agreement_with_lucene"]:
        return []
    lines = [
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
    return lines


def _analyzer_section(report: dict) -> list[str]:
    if not report["analyzer_parity"]:
        return []
    return [
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
