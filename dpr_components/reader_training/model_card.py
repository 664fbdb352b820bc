"""Write the model card (README.md) of a committed reader from its training run and benchmark.

    python -m dpr_components.reader_training.model_card --model models/reader-minilm --run runs/reader-minilm \\
        --benchmark docs/benchmarks/reader/reader.json

Every number in the card is read from the run folder (``command.txt``, ``data.json``), the
model's ``reader_info.json`` and the benchmark result, so the card never disagrees with them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dpr_components.evaluation.tables import markdown_table
from dpr_components.reader_training.model_record import training_cost
from dpr_components.runs.run_folder import read_run_file
from dpr_components.runs.run_log import read_log
from dpr_components.utils.atomic_files import atomic_write_text

BENCHMARK_COMMAND_DOC = "docs/benchmarks/reader/reader.md"

# the recipes are the source repository's: a card travels with the installed model, its recipes do not
RECIPES_NOTE = (
    "The commands below, and the `training/`, `docs/` and `benchmarks/` paths, are those of the project's source "
    "repository, run from a clone with its data: the installed package holds the model, not its recipes."
)


def _size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file()) / 1e6


def _data_lines(data: dict[str, int], sample: Any, seed: Any) -> list[str]:
    lines = []
    for name, count in data.items():
        if name.startswith("squad"):
            how = (
                f"drawn at random (seed {seed}) from the 87,599 of SQuAD v1.1 train"
                if sample
                else "of SQuAD v1.1 train (all of it)"
            )
            lines.append(f"- `{name}`: {count:,} questions {how}; positive: the question's own paragraph.")
        else:
            lines.append(
                f"- `{name}`: {count:,} questions with at least one retrieved passage containing an answer "
                "(the positives); the others are dropped."
            )
    return lines


def _cost_sentence(cost: dict[str, float] | None) -> str:
    if not cost:
        return ""
    return (
        f"Training cost on the 2-core CPU (shared with other jobs for part of the run): median "
        f"{cost['passages_per_s']:.1f} passages/s ({cost['questions_per_s']:.1f} questions/s), "
        f"about {cost['hours']:.1f} h of training steps (dev evaluations excluded), peak memory "
        f"{cost['peak_gb']:.1f} GB."
    )


def _settings_sentence(training: dict[str, Any], step: int) -> str:
    return (
        f"Settings: {training['passages_per_question']} passages per question, {training['batch_size']} questions per "
        f"step, {step} steps kept of {training.get('max_steps') or 'one epoch'}, AdamW lr "
        f"{training['learning_rate']:g} (warm-up {training['warmup_ratio']:.0%}, linear decay, weight decay "
        f"{training['weight_decay']:g}), inputs of at most {training['max_length']} tokens, "
        f"{'bf16 autocast' if training['bf16'] else 'fp32'}."
    )


def _stage_lines(command: str, data: dict[str, int], training: dict[str, Any]) -> list[str]:
    """The command of one training stage and the questions it read."""
    sample = next((a.split("=", 1)[-1] for a in command.split("--sample ")[1:2]), None)
    return [
        "```bash",
        command,
        "```",
        "",
        "Training questions (each with one positive and "
        f"{_count(training['passages_per_question'] - 1, 'BM25-retrieved negative passage')} without any answer):",
        *_data_lines(data, sample, training["seed"]),
        "",
    ]


def _earlier_stages(info: dict[str, Any]) -> list[str]:
    """The stages a continued reader went through before its own run, oldest first."""
    chain, record = [], info.get("continues")
    while isinstance(record, dict):
        chain.append(record)
        record = record.get("continues")
    lines = []
    for number, record in enumerate(reversed(chain), start=1):
        lines += [f"Stage {number}, from {record['training'].get('init_model', '?')}:", ""]
        lines += _stage_lines(record.get("command", "?"), record.get("data", {}), record["training"])
        lines += [_settings_sentence(record["training"], record["step"]) + " " + _cost_sentence(record.get("cost")), ""]
    if lines:
        lines += [f"Stage {len(chain) + 1}, going on from the reader of stage {len(chain)}:", ""]
    return lines


def _end_to_end_lines(results: list[dict[str, Any]], ranking: str) -> list[str]:
    """One exact-match table per end-to-end dataset, with the answer ranking the packaged ``qa_fast`` uses."""
    lines = []
    for result in results:
        by_name = result["exact_match"][ranking]
        ks = list(next(iter(by_name.values())).keys())
        lines += [
            f"- {result['dataset']} end to end over the 55,350-passage pool ({result.get('questions', result['n'])} questions), "
            "exact match "
            f"with the top-k passages (answer ranking `{ranking}`, as in `qa_fast`):",
            "",
            *markdown_table(
                ["retriever", *(f"k={k}" for k in ks)],
                [[name, *(f"{by_k[k]:.1f}" for k in ks)] for name, by_k in by_name.items()],
                "l" + "r" * len(ks),
            ),
            "",
        ]
    return lines


def _selection(info: dict[str, Any], run: Path) -> str:
    """How the exported step was chosen, with its dev exact match."""
    training = info["training"]
    dev = f"{training['dev_limit']} squad/dev questions read with {training['dev_passages']} passages each"
    if info.get("exported") != "last":
        return f"Selected by exact match on {dev}: EM {info['dev_em']:.1f} at step {info['step']}."
    evaluations = [e for e in read_log(run / "log.jsonl") if "dev_em" in e]
    best = max(evaluations, key=lambda e: e["dev_em"], default=None)
    last = f"EM {info['dev_em']:.1f} on {dev}" if info.get("dev_em") is not None else f"not evaluated on {dev}"
    best_text = (
        f"; the best step on them was {best['step']} (EM {best['dev_em']:.1f}), within their noise"
        if best is not None and best["step"] != info["step"]
        else ""
    )
    return (
        f"Exported at the last step, {info['step']} (`--export last`: on all of squad/dev with the gold paragraph "
        f"it scored higher than the best step on the smaller dev draw, a dev choice): {last}{best_text}."
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def render(model: Path, run: Path, benchmark: dict[str, Any]) -> str:
    info = read_run_file(model / "reader_info.json")
    training = info["training"]
    command = (run / "command.txt").read_text(encoding="utf-8").strip() if (run / "command.txt").is_file() else "?"
    data = read_run_file(run / "data.json")
    squad, latency = benchmark["squad_gold"], benchmark["latency"]
    lines = [
        f"# {model.name}: DPR span reader from all-MiniLM-L6-v2",
        "",
        "The extractive reader of Dense Passage Retrieval (Karpukhin et al. 2020, section 6) in the Hugging Face "
        "`DPRReader` layout: one encoder pass over `[CLS] question [SEP] title [SEP] passage` per passage, a "
        "passage-selection score from the `[CLS]` vector and start/end scores for the answer span. Encoder: "
        "all-MiniLM-L6-v2 (6 layers, hidden size 384), fine-tuned on a 2-core CPU. Weights in float16 safetensors "
        f"({_size_mb(model):.0f} MB with the tokenizer; they load as float32). `haystack_integrations.components.readers.dpr.span_reader."
        "SpanReader` and the packaged `qa_fast` pipeline use it.",
        "",
        "## How it was made",
        "",
        RECIPES_NOTE,
        "",
        *_earlier_stages(info),
        *_stage_lines(command, data, training),
        _settings_sentence(training, info["step"]) + " Loss: marginal likelihood of every answer occurrence in "
        "the positive plus the passage-selection log-likelihood (training/reader/README.md). " + _selection(info, run),
        "",
        _cost_sentence(info.get("cost") or training_cost(run)),
        "",
        f"## Results ({BENCHMARK_COMMAND_DOC}, `{benchmark['command']}`)",
        "",
        f"- SQuAD dev, gold paragraph given ({squad['n']:,} questions): exact match {squad['exact_match']:.1f}, "
        f"F1 {squad['f1']:.1f}.",
        *_end_to_end_lines(benchmark["end_to_end"], latency["qa_ranking"]),
        f"- `qa_fast` on the pool, top 10 passages read: p50 "
        f"{latency['stages']['pipeline']['p50_ms']:.0f} ms, p95 {latency['stages']['pipeline']['p95_ms']:.0f} ms "
        "per question.",
        "",
        "## Licence and data",
        "",
        "Derived from all-MiniLM-L6-v2 (Apache-2.0). Trained on SQuAD v1.1 (CC BY-SA 4.0) and Natural Questions "
        "(CC BY-SA 3.0) passages from English Wikipedia (CC BY-SA).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="models/reader-minilm", help="the committed reader folder")
    parser.add_argument("--run", default="runs/reader-minilm", help="its training run folder")
    parser.add_argument("--benchmark", default="docs/benchmarks/reader/reader.json")
    args = parser.parse_args(argv)
    card = render(Path(args.model), Path(args.run), read_run_file(Path(args.benchmark)))
    atomic_write_text(Path(args.model) / "README.md", card)
    print(f"wrote {Path(args.model) / 'README.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
