"""The page of ``benchmarks/peers/haystack_native.py``: its tables and goals computed from the run's JSON (per
question first-hit ranks, exact match and F1, seconds; per process times and memory), so ``--from-json``
renders the same page again."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks.load.query_latency import LOAD_GOAL
from benchmarks.reader.qa_pipelines import percentile_ms
from dpr_components.evaluation.intervals import paired_bootstrap_difference, score_interval, supported_gain
from dpr_components.evaluation.metric_intervals import difference_cell, hits_at, interval_cell
from dpr_components.evaluation.tables import markdown_table
from dpr_components.evaluation.templates import fill_template, sibling_template

TEMPLATE = sibling_template(__file__, "haystack_native.md.template")
KS = (1, 5, 20)
THREAD_COUNTS = ("1", "2")
# Haystack's retrieval systems and ours each is compared with
COUNTERPART = {
    "Haystack BM25": "ours BM25",
    "Haystack embedding": "ours dense",
    "Haystack RRF": "ours hybrid",
    "Haystack DBSF": "ours hybrid",
}
OURS_QA, HAYSTACK_QA = "qa", "haystack_qa"
OUR_RANKER, HAYSTACK_RANKER = "ours", "Haystack"  # the re-ranking rows of haystack_native.py
INDEXERS = {"ours": "ours", "haystack": "Haystack"}
GOAL_SPEED, GOAL_EM, GOAL_INDEXING = 5.0, 2.0, 2.0
GOAL_LOAD = LOAD_GOAL  # a question beside a background load: loaded / quiet p50
MIB = 2**20


def spread(values: Sequence[float], digits: int = 1) -> str:
    """``median [min, max]`` of ``values`` (the value alone when there is one)."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}, {max(values):.{digits}f}]"


def indexing_values(run: dict[str, Any]) -> dict[str, float]:
    """One indexing run's seconds (write + save), passages per second, peak memory and disk, in MiB."""
    seconds = run["write_seconds"] + run["save_seconds"]
    return {
        "seconds": seconds,
        "per_second": run["passages"] / seconds if seconds else float("inf"),
        "peak_mib": run["peak_mib"],
        "disk_mib": run["disk_bytes"] / MIB,
    }


def indexing_rows(indexing: dict[str, list[dict[str, Any]]]) -> list[list[str]]:
    rows = []
    for system, runs in indexing.items():
        values = [indexing_values(run) for run in runs]
        rows.append(
            [
                INDEXERS.get(system, system),
                str(runs[0]["passages"]),
                spread([v["seconds"] for v in values]),
                spread([v["per_second"] for v in values], 0),
                spread([v["peak_mib"] for v in values], 0),
                spread([v["disk_mib"] for v in values], 0),
            ]
        )
    return rows


def retrieval_rows(systems: dict[str, dict[str, Any]]) -> list[list[str]]:
    """Per system: top-1/5/20 with intervals, each Haystack system's paired difference from its counterpart
    of ours at each k (— for ours), and the median ms of a search."""
    rows = []
    for name, run in systems.items():
        cells = [interval_cell(score_interval(hits_at(run["ranks"], k)).scaled(100)) for k in KS]
        other = COUNTERPART.get(name)
        if other is None:
            differences = ["—"] * len(KS)
        else:
            reference = systems[other]["ranks"]
            differences = [
                difference_cell(
                    paired_bootstrap_difference(hits_at(run["ranks"], k), hits_at(reference, k)).scaled(100)
                )
                for k in KS
            ]
        rows.append([name, *cells, *differences, f"{statistics.median(run['ms']):.1f}"])
    return rows


def reranking_rows(reranking: dict[str, Any]) -> list[list[str]]:
    """Per ranker over the same candidates: answer in its first and in its first ``top_k`` documents, the
    difference from ours (paired), and the median ms of a call."""
    systems, top_k = reranking["systems"], reranking["top_k"]
    ours = next(iter(name for name in systems if name.startswith("ours")))
    rows = []
    for name, run in systems.items():
        cells = [interval_cell(score_interval(hits_at(run["ranks"], k)).scaled(100)) for k in (1, top_k)]
        if name == ours:
            differences = ["—", "—"]
        else:
            differences = [
                difference_cell(
                    paired_bootstrap_difference(hits_at(run["ranks"], k), hits_at(systems[ours]["ranks"], k)).scaled(
                        100
                    )
                )
                for k in (1, top_k)
            ]
        ms = f"{statistics.median(run['ms']):.1f}" if run.get("ms") else "—"
        rows.append([name, *cells, *differences, ms])
    return rows


def end_to_end_rows(runs: dict[str, dict[str, Any]]) -> list[list[str]]:
    """Per pipeline and no-answer setting: EM and F1 with intervals, EM minus ours ``qa`` as shipped (paired),
    and ms p50 / p90 per question at each thread count."""
    reference = runs[OURS_QA]["em"]["on"]
    rows = []
    for label, run in runs.items():
        timing = [
            f"{statistics.median(run['seconds'][t]) * 1000:.0f} / {percentile_ms(run['seconds'][t], 0.9):.0f}"
            for t in THREAD_COUNTS
        ]
        for setting in ("on", "off"):
            em, f1_scores = run["em"][setting], run["f1"][setting]
            shipped = label == OURS_QA and setting == "on"
            difference = "—" if shipped else difference_cell(paired_bootstrap_difference(em, reference).scaled(100))
            rows.append(
                [
                    f"`{label}`, no-answer {setting}",
                    interval_cell(score_interval(em).scaled(100)),
                    interval_cell(score_interval(f1_scores).scaled(100)),
                    difference,
                    *timing,
                ]
            )
    return rows


def cold_rows(cold: dict[str, list[dict[str, Any]]]) -> list[list[str]]:
    """Per system: seconds from a fresh process to its first answer, resident and peak memory (MiB)."""
    return [
        [
            f"`{system}`",
            spread([run["seconds"] for run in runs], 2),
            spread([run["rss_mib"] for run in runs], 0),
            spread([run["peak_mib"] for run in runs], 0),
            str(len(runs)),
        ]
        for system, runs in cold.items()
    ]


def goals(summary: dict[str, Any]) -> dict[str, Any]:
    """The goals' numbers: how many times faster ours ``qa`` answers than Haystack's (median per question at
    each thread count), its exact match minus the better of Haystack's no-answer settings (paired), and how
    many times more passages per second ours indexes (medians)."""
    runs = summary["end_to_end"]["runs"]
    speed = {
        t: statistics.median(runs[HAYSTACK_QA]["seconds"][t]) / statistics.median(runs[OURS_QA]["seconds"][t])
        for t in THREAD_COUNTS
    }
    better = max(("on", "off"), key=lambda s: statistics.fmean(runs[HAYSTACK_QA]["em"][s]))
    em = paired_bootstrap_difference(runs[OURS_QA]["em"]["on"], runs[HAYSTACK_QA]["em"][better]).scaled(100)
    per_second = {
        system: statistics.median(indexing_values(run)["per_second"] for run in summary["indexing"][system])
        for system in INDEXERS
    }
    return {
        "speed": speed,
        "speed_met": all(ratio >= GOAL_SPEED for ratio in speed.values()),
        "em": em,
        "em_against": better,
        "em_met": em.interval.estimate >= GOAL_EM and supported_gain(em),
        "indexing": per_second["ours"] / per_second["haystack"],
        "indexing_met": per_second["ours"] / per_second["haystack"] >= GOAL_INDEXING,
    }


def goal_lines(summary: dict[str, Any]) -> str:
    found = goals(summary)
    verdict = {True: "**met**", False: "**not met**"}
    speed = ", ".join(f"{ratio:.1f}× on {t} thread{'s' if t != '1' else ''}" for t, ratio in found["speed"].items())
    return "\n".join(
        [
            f"- `qa` at least {GOAL_SPEED:.0f}× faster per question than `haystack_qa` (medians): {speed}: "
            f"{verdict[found['speed_met']]}.",
            f"- `qa` at least {GOAL_EM:.0f} points of exact match above `haystack_qa` (no-answer "
            f"{found['em_against']}, its better setting), the paired interval above zero: "
            f"{difference_cell(found['em'])}: {verdict[found['em_met']]}.",
            f"- indexing at least {GOAL_INDEXING:.0f}× faster (passages per second, medians): "
            f"{found['indexing']:.2f}×: {verdict[found['indexing_met']]}.",
            million_store_line(summary),
            under_load_line(summary.get("under_load")),
        ]
    )


def haystack_better(summary: dict[str, Any]) -> list[str]:
    """Every row where a Haystack component did better than its counterpart of ours: a retrieval or re-ranking
    gain whose paired interval is above zero, a lower median time, less memory or a faster cold start."""
    found = []
    retrieval = summary["retrieval"]
    for name, ours in COUNTERPART.items():
        for k in KS:
            theirs, reference = hits_at(retrieval[name]["ranks"], k), hits_at(retrieval[ours]["ranks"], k)
            if supported_gain(paired_bootstrap_difference(theirs, reference)):
                found.append(f"{name} top-{k} above {ours}")
        if statistics.median(retrieval[name]["ms"]) < statistics.median(retrieval[ours]["ms"]):
            found.append(f"{name} faster than {ours}")
    systems, top_k = summary["reranking"]["systems"], summary["reranking"]["top_k"]
    for k in (1, top_k):
        theirs, reference = hits_at(systems[HAYSTACK_RANKER]["ranks"], k), hits_at(systems[OUR_RANKER]["ranks"], k)
        if supported_gain(paired_bootstrap_difference(theirs, reference)):
            found.append(f"the Haystack ranker's top-{k} above ours")
    if statistics.median(systems[HAYSTACK_RANKER]["ms"]) < statistics.median(systems[OUR_RANKER]["ms"]):
        found.append("the Haystack ranker faster than ours")
    runs = summary["end_to_end"]["runs"]
    for setting in ("on", "off"):
        if supported_gain(paired_bootstrap_difference(runs[HAYSTACK_QA]["em"][setting], runs[OURS_QA]["em"]["on"])):
            found.append(f"`haystack_qa` (no-answer {setting}) exact match above `qa`")
    per_second = {system: statistics.median(indexing_values(run)["per_second"] for run in summary["indexing"][system])
                  for system in INDEXERS}  # fmt: skip
    if per_second["haystack"] > per_second["ours"]:
        found.append("Haystack's indexing faster")
    cold = {name: [statistics.median(run[key] for run in summary["cold"][name]) for key in ("seconds", "rss_mib")]
            for name in (OURS_QA, HAYSTACK_QA)}  # fmt: skip
    if cold[HAYSTACK_QA][0] < cold[OURS_QA][0]:
        found.append("`haystack_qa`'s cold start faster")
    if cold[HAYSTACK_QA][1] < cold[OURS_QA][1]:
        found.append("`haystack_qa` smaller in memory")
    return found


def haystack_better_line(summary: dict[str, Any]) -> str:
    found = haystack_better(summary)
    if not found:
        return (
            "Where a Haystack component did better than ours, in accuracy (a paired gain), time or memory: on no "
            "row above. Nothing was adopted from it."
        )
    return "Where a Haystack component did better than ours: " + "; ".join(found) + "."


def under_load(load: dict[str, Any], pipeline: str = "dense", behaviour: str = "new") -> dict[str, list[float]]:
    """From ``docs/benchmarks/load/load.json``: the loaded / quiet p50 of ``pipeline``'s questions in each of
    its runs, per idle-thread policy (``spin``, ``passive``)."""
    runs = load.get("runs") or [load["wait_policies"]]
    return {policy: [run[policy][pipeline][behaviour]["loaded_over_quiet_p50"] for run in runs] for policy in runs[0]}


def under_load_line(ratios: dict[str, list[float]] | None) -> str:
    """The goal of a question beside a background load, from :func:`under_load`'s ratios."""
    if not ratios:
        return "- a question beside a 2-core background load within 2× of its quiet latency: not measured."

    def runs(policy: str) -> str:
        found = ratios[policy]
        over = sum(ratio > GOAL_LOAD for ratio in found)
        return f"{min(found):.2f}× to {max(found):.2f}×, above {GOAL_LOAD:g}× in {over} of {len(found)}"

    verdict = {policy: "**met**" if max(found) <= GOAL_LOAD else "**not met**" for policy, found in ratios.items()}
    line = (
        f"- a dense question in the library beside a 2-core background load within {GOAL_LOAD:g}× of its quiet "
        f"p50 in every one of {len(ratios['passive'])} runs ([load.md](../load/load.md), `load.json`): with idle "
        f"OpenMP threads sleeping (`OMP_WAIT_POLICY=PASSIVE`, `haystack serve`'s default) {runs('passive')}: "
        f"{verdict['passive']}; with OpenMP's default (idle threads spinning beside batch work in the same "
        f"process) {runs('spin')}: {verdict['spin']}."
    )
    if verdict["spin"] == "**met**":
        return line
    return line + (
        " The library cannot choose the policy in a Haystack program: `import haystack` loads torch "
        "(`haystack.utils.device`) and OpenMP reads the policy once, when it loads, so a program of your own "
        "sets it in its environment (docs/threads.md)."
    )


def million_store(scale: dict[str, Any], size: str = "1000000") -> dict[str, float] | None:
    """From ``docs/benchmarks/scale/scale.json``: the seconds a new process takes to open a store of ``size``
    passages and answer its first BM25 and dense searches (indexes memory-mapped), its anonymous memory then,
    and the size of its 384-dimension float32 vectors (MiB); None when that size was not measured."""
    serve = scale.get("sizes", {}).get(size, {}).get("serve")
    if not serve:
        return None
    return {
        "passages": float(size),
        "open_seconds": serve["open_s"] + serve["first_bm25_s"] + serve["first_dense_s"],
        "heap_mib": serve["memory_after_open"]["anon_mb"],
        "vectors_mib": int(size) * 384 * 4 / MIB,
    }


def million_store_line(summary: dict[str, Any]) -> str:
    found = summary.get("million_store")
    if not found:
        return "- a 1M-passage store opened in under a second: not measured for this page."
    met = found["open_seconds"] < 1.0 and found["heap_mib"] < found["vectors_mib"]
    return (
        f"- a store of {found['passages']:,.0f} passages opened in under a second with resident memory (its heap) "
        f"below its vectors' size, the indexes memory-mapped ([scale.md](../scale/scale.md), `scale.json`): "
        f"{found['open_seconds']:.2f} s to the first BM25 and dense answers, {found['heap_mib']:,.0f} MiB of heap "
        f"against {found['vectors_mib']:,.0f} MiB of vectors: {'**met**' if met else '**not met**'}. "
        "`InMemoryDocumentStore` reads every document and vector at its load (`load_from_disk`); it was loaded "
        "at the pool's size only, in the cold start above."
    )


def agreement_line(agreement: dict[str, Any]) -> str:
    if not agreement["passages"]:
        return "No candidates to compare."
    return (
        f"Over {agreement['passages']} passages of {agreement['questions']} questions, the exported ranker's "
        f"score mapped back (atanh(ε·score)/ε) differs from our selection head's logit by at most "
        f"{agreement['max_abs_difference']:.2g}; both order the candidates alike for {agreement['same_order']} of "
        f"{agreement['questions']} questions."
    )


def render(summary: dict[str, Any]) -> str:
    """The page: every table and the goals from ``summary``."""
    retrieval = ["system", *(f"top-{k}" for k in KS), *(f"Δ top-{k}" for k in KS), "ms p50"]
    top_k = summary["reranking"]["top_k"]
    reranking = ["ranker", "top-1", f"top-{top_k}", "Δ top-1", f"Δ top-{top_k}", "ms p50"]
    threads = [f"ms p50 / p90, {t} thread{'s' if t != '1' else ''}" for t in THREAD_COUNTS]
    values = {
        "asked": sum(summary["asked"].values()),
        "questions": summary["questions"],
        "store": summary["store"],
        "cpu": summary["machine"]["cpu"],
        "cores": summary["machine"]["cores"],
        "versions": ", ".join(f"{name} {version}" for name, version in summary["versions"].items()),
        "settings": "\n".join(f"- {key}: `{value}`" for key, value in summary["shared"].items()),
        "indexing_table": "\n".join(
            markdown_table(["system", "passages", "s", "passages/s", "peak MiB", "disk MiB"], indexing_rows(summary["indexing"]), "lrrrrr")
        ),
        "retrieval_table": "\n".join(markdown_table(retrieval, retrieval_rows(summary["retrieval"]), "l" + "r" * 7)),
        "candidates": summary["reranking"]["candidates"],
        "top_k": top_k,
        "reranking_table": "\n".join(markdown_table(reranking, reranking_rows(summary["reranking"]), "lrrrrr")),
        "agreement": agreement_line(summary["reranking"]["agreement"]),
        "end_to_end_table": "\n".join(
            markdown_table(["pipeline", "EM", "F1", "EM − `qa`", *threads], end_to_end_rows(summary["end_to_end"]["runs"]), "lrrrrr")
        ),
        "cold_table": "\n".join(
            markdown_table(["pipeline", "s to first answer", "resident MiB", "peak MiB", "runs"], cold_rows(summary["cold"]), "lrrrr")
        ),
        "latency_questions": len(next(iter(summary["end_to_end"]["runs"].values()))["seconds"][THREAD_COUNTS[0]]),
        "goals": goal_lines(summary),
        "haystack_better": haystack_better_line(summary),
        "command": summary["command"],
    }  # fmt: skip
    return fill_template(TEMPLATE, values)
