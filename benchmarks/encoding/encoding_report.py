"""Markdown rendering of the encoding benchmark's JSON report: the values of
``encoding_report.md.template`` (its tables and numbers) computed from the report."""

from __future__ import annotations

from dpr_components.evaluation.tables import table_header, table_row
from dpr_components.evaluation.templates import fill_template, sibling_template

TEMPLATE = sibling_template(__file__, "encoding_report.md.template")
LABELS = {
    "ours_fp32": "ours, fp32",
    "ours_auto": "ours, precision auto (bf16 weights here)",
    "st_fp32_pair": "sentence-transformers, fp32, (title, text) pairs",
    "st_bf16_pair": "sentence-transformers, bf16 autocast, (title, text) pairs",
    "st_bf16w_pair": "sentence-transformers, bf16 weights (`model.to(torch.bfloat16)`), (title, text) pairs",
    "st_fp32_prefix": 'sentence-transformers, fp32, "title. text" strings',
}
LATENCY_LABELS = {
    "ours_auto": "ours `encode_questions([q])`, precision auto (bf16 weights)",
    "ours_fp32": "ours `encode_questions([q])`, fp32",
    "st_fp32": "sentence-transformers `encode([q])`, fp32",
}


def render_markdown(report: dict, command: str) -> str:
    """The whole report, from the JSON ``report`` and the command that measured it."""
    return fill_template(TEMPLATE, report_values(report, command))


def report_values(report: dict, command: str) -> dict[str, object]:
    """The template's placeholders."""
    cfg, env, ret = report["config"], report["environment"], report["retrieval"]
    padding = cfg["padding_overhead"]
    return {
        "command": command,
        **{key: env[key] for key in ("date", "cpu", "torch_threads", "torch", "sentence_transformers")},
        "bf16_supported": env["bf16_supported"],
        **{key: cfg[key] for key in ("max_length", "passages", "seed", "batch_size", "repeats", "chunk")},
        "mean_tokens": f"{cfg['mean_tokens']:.0f}",
        **{key: f"{padding[key]:.2f}" for key in ("by_characters", "by_tokens", "unsorted")},
        "throughput_table": "\n".join(throughput_table(report["throughput"])),
        "agreement_table": "\n".join(agreement_table(report["agreement"])),
        "retrieval_questions": ret["questions"],
        "retrieval_passages": ret["passages"],
        "gold_paragraphs": ret["gold_paragraphs_found"],
        "retrieval_others": f"{cfg['retrieval_others']:,}",
        "retrieval_table": "\n".join(retrieval_table(ret)),
        **{f"slice_{key}": f"{ret['agreement'][key]:.5f}" for key in ("min", "p01", "mean")},
        "latency_questions": cfg["latency_questions"],
        "latency_table": "\n".join(latency_table(report["latency"])),
    }


def throughput_table(throughput: dict) -> list[str]:
    """Median passages/s, every run and the ratio to sentence-transformers fp32 pairs, per system."""
    lines = table_header(["system", "passages/s (median)", "runs", "ratio vs ST fp32 pairs"], "lrlr")
    for name, row in throughput.items():
        runs = ", ".join(f"{x:.1f}" for x in row["passages_per_s_runs"])
        lines.append(
            f"| {LABELS[name]} | {row['passages_per_s_median']:.1f} | {runs} | {row['ratio_vs_st_fp32_pair_median']:.2f}x |"
        )
    return lines


def agreement_table(agreement: dict) -> list[str]:
    """Cosine similarity per passage of each pair of systems compared."""
    lines = table_header(["compared", "min", "1st percentile", "mean"], "lrrr")
    return lines + [
        f"| {name} | {row['min']:.5f} | {row['p01']:.5f} | {row['mean']:.5f} |" for name, row in agreement.items()
    ]


def retrieval_table(retrieval: dict) -> list[str]:
    """Top-k accuracy of fp32 and precision auto on the pool slice."""
    ks = [k.split("_")[1] for k in retrieval["fp32"]]
    lines = table_header(["encoder", *(f"top-{k}" for k in ks)], "l" + "r" * len(ks))
    return lines + [
        table_row([f"ours, {name}", *(f"{v:.1f}" for v in retrieval[name].values())]) for name in ("fp32", "auto")
    ]


def latency_table(latency: dict) -> list[str]:
    """Single-question latency percentiles per system."""
    lines = table_header(["system", "p50 ms", "p95 ms", "mean ms"], "lrrr")
    return lines + [
        f"| {LATENCY_LABELS[name]} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | {row['mean_ms']:.1f} |"
        for name, row in latency.items()
    ]
