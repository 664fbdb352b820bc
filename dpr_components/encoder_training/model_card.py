"""Write the model card (README.md) of the committed DPR encoder pair from its training run
and the recipe's reports.

    python -m dpr_components.encoder_training.model_card --model models/dpr-minilm-multi \\
        --run runs/dpr-nq/<run or soup folder>

Numbers come from the run folder (``config.json``, ``result.json``, ``log.jsonl``, the mined
data's ``.meta.json``), docs/training/dpr_nq.json (full-pool evaluation) and
docs/training/hybrid/retrieval_quality.json (hybrid with BM25), so the card never disagrees
with them."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpr_components.evaluation.tables import table_header, table_row
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.runs.run_folder import read_run_file
from dpr_components.utils.atomic_files import atomic_write_text

KS = ("1", "5", "20", "100")
DATASETS = {"nq/dev.jsonl": "NQ dev", "squad/dev.jsonl": "SQuAD dev"}
TEMPLATE = sibling_template(__file__, "model_card.md.template")


def _size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def _find(runs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for run in runs:
        if run.get("name") == name:
            return run
    raise SystemExit(
        f"run {name!r} is not in the report: run `python -m training.retriever.train_dpr_nq --stage report`"
    )


def _accuracy_row(label: str, datasets: dict[str, Any]) -> str:
    cells = []
    for dataset in DATASETS:
        scores = datasets.get(dataset, {}).get("top_k", {})
        cells += [f"{scores[k]:.1f}" if k in scores else "" for k in KS]
    return table_row([label, *cells])


def _hybrid_datasets(hybrid: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The pipeline-default hybrid row of each dataset, in the report's shape."""
    label, out = "", {}
    for result in hybrid:
        name = next(n for n in result["full"] if n.startswith("hybrid (pipeline default"))
        label = name
        out[result["dataset"]] = {"top_k": {k: result["full"][name]["top_k_accuracy"][k] for k in KS}}
    return label, out


def _recipe_flags(variant: dict[str, Any]) -> str:
    """The train_dpr_nq arguments that reproduce a run's variant."""
    flags = []
    if variant.get("question_side"):
        flags.append("--question-side")
    if variant.get("dense_negatives"):
        flags.append("--dense-negatives")
    if variant.get("squad_questions"):
        flags += ["--with-squad", str(variant["squad_questions"])] + (["--multi"] if variant.get("multi") else [])
    defaults = {"negatives": 1, "epochs": 1, "batch_size": 32, "learning_rate": 2e-5, "seed": 12345}
    names = {
        "negatives": "--negatives",
        "epochs": "--epochs",
        "batch_size": "--batch-size",
        "learning_rate": "--learning-rate",
        "seed": "--seed",
    }
    for field, default in defaults.items():
        if variant.get(field, default) != default:
            flags += [names[field], f"{variant[field]:g}" if isinstance(variant[field], float) else str(variant[field])]
    return " ".join(flags)


def _ingredients(run: Path) -> tuple[list[Path], list[str] | None]:
    """The run folders behind ``run``: itself, or a soup's averaged runs (and their names)."""
    evaluation = run / "eval.json"
    soup = read_run_file(evaluation).get("soup") if evaluation.is_file() else None
    if soup:
        return [run.parent / name for name in soup], soup
    return [run], None


@dataclass(frozen=True)
class RunFiles:
    """What the card reads from the run folder (the first ingredient of a soup) and its mined negatives."""

    config: dict[str, Any]
    result: dict[str, Any]
    variant: dict[str, Any]
    mined: dict[str, Any]

    @classmethod
    def read(cls, first: Path) -> RunFiles:
        """The files of the run folder ``first``."""
        variant = read_run_file(first / "variant.json")
        suffix = "bm25-dense" if variant.get("dense_negatives", False) else "bm25"
        return cls(
            config=read_run_file(first / "config.json")["config"],
            result=read_run_file(first / "result.json"),
            variant=variant,
            mined=read_run_file(first.parent / "data" / f"nq-train-{suffix}.jsonl.meta.json"),
        )

    @property
    def question_side(self) -> bool:
        """Whether only the question encoder was trained."""
        return not self.config.get("train_passage_encoder", True)


def render(
    model: Path,
    run: Path,
    report: dict[str, Any],
    hybrid: list[dict[str, Any]] | None,
    shipped: dict[str, Any] | None = None,
    passed_over: list[str] | None = None,
) -> str:
    """The card; ``shipped``: ``training.retriever.evaluate`` of the committed (float16) copy itself;
    ``passed_over``: runs or soups of the report that were compared on dev and not picked."""
    runs, soup = _ingredients(run)
    files = RunFiles.read(runs[0])
    squad = files.variant.get("squad_questions", 0)
    title, what = _description(model, files.question_side, squad)
    values = {
        "title": title,
        "what": what,
        "commands": "\n".join(_commands(model, run, runs, soup, files, shipped is not None)),
        "soup_note": _soup_note(runs, soup),
        **_recipe_values(files, soup),
        "report_command": report["command"],
        "table": "\n".join(accuracy_table(model, run.name, report, hybrid, shipped, passed_over, soup)),
        "squad_licence": " and SQuAD v1.1 (CC BY-SA 4.0)" if squad else "",
    }
    return fill_template(TEMPLATE, values)


def accuracy_table(
    model: Path,
    run_name: str,
    report: dict[str, Any],
    hybrid: list[dict[str, Any]] | None,
    shipped: dict[str, Any] | None,
    passed_over: list[str] | None,
    soup: list[str] | None,
) -> list[str]:
    """Baselines, the model (and its committed copy), the runs passed over and the hybrid, per dataset and k."""
    evaluation = _find(report["soups" if soup else "runs"], run_name)
    baselines = {b["name"]: b for b in report["baselines"]}
    columns = ["system", *(f"{DATASETS[d]} top-{k}" for d in DATASETS for k in KS)]
    rows = [
        _accuracy_row(name, baselines[name]["datasets"]) for name in ("bm25", "minilm-zero-shot") if name in baselines
    ]
    if shipped is None:
        rows.append(_accuracy_row(f"**{model.name}**", evaluation["datasets"]))
    else:
        rows.append(_accuracy_row(f"{model.name} ({'soup' if soup else 'run'}, float32)", evaluation["datasets"]))
        rows.append(_accuracy_row(f"**{model.name}** (float16, as committed)", shipped["datasets"]))
    for name in passed_over or []:
        other = next((r for r in report["runs"] + report.get("soups", []) if r["name"] == name), None)
        if other is None:
            raise SystemExit(f"--passed-over {name}: no such run or soup in the report")
        rows.append(_accuracy_row(f"`{name}` (compared on dev, not picked)", other["datasets"]))
    if hybrid:
        label, datasets = _hybrid_datasets(hybrid)
        rows.append(_accuracy_row(f"BM25 + {model.name}, {label}", datasets))
    return [*table_header(columns, "l" + "r" * (len(columns) - 1)), *rows]


def _description(model: Path, question_side: bool, squad: int) -> tuple[str, str]:
    """The card's title and what the model is."""
    data_name = "Natural Questions and SQuAD" if squad else "Natural Questions"
    if question_side:
        return (
            f"# {model.name}: a DPR question encoder for all-MiniLM-L6-v2's passage vectors, trained on {data_name}",
            "Dense Passage Retrieval (Karpukhin et al. 2020) at CPU scale, question side only: `question_encoder/` "
            "(`DPRQuestionEncoder`, initialised from all-MiniLM-L6-v2: 6 layers, 384 dimensions, mean pooling, "
            "unit-length vectors, so scores are cosine similarities) was trained against the fixed passage vectors of "
            "all-MiniLM-L6-v2 itself, which stays the passage encoder: index with `bundled:all-MiniLM-L6-v2` "
            "(`encoder_pair.json` records it, and `DenseRetriever` checks a store's vectors against it), so a store "
            "already indexed with MiniLM needs no re-indexing. Weights in float16 safetensors "
            f"({_size_mb(model):.0f} MB with the tokenizer; they load as float32). The packaged pipelines (`search`, "
            "`dense`, `qa` and the others) use it by default.",
        )
    return (
        f"# {model.name}: DPR question and passage encoders from all-MiniLM-L6-v2, trained on {data_name}",
        "Dense Passage Retrieval (Karpukhin et al. 2020) at CPU scale: two independent encoders, "
        "`question_encoder/` (`DPRQuestionEncoder`) and `passage_encoder/` (`DPRContextEncoder`), both initialised "
        "from all-MiniLM-L6-v2 (6 layers, 384 dimensions, mean pooling, unit-length vectors: scores are cosine "
        f"similarities). Weights in float16 safetensors ({_size_mb(model):.0f} MB with the tokenizers; they load as "
        'float32). Use it as `DenseRetriever(model=".../question_encoder")` '
        'and `PassageEmbedder(model=".../passage_encoder")`. Index passages with the passage encoder: vectors of '
        "another encoder do not match its questions.",
    )


def _commands(
    model: Path, run: Path, runs: list[Path], soup: list[str] | None, files: RunFiles, shipped: bool
) -> list[str]:
    """The commands that trained, exported (and evaluated the committed copy of) the model."""
    if soup:
        commands = [
            "python -m training.retriever.train_dpr_nq " + _recipe_flags(read_run_file(r / "variant.json"))
            for r in runs
        ]
        commands.append("python -m training.retriever.train_dpr_nq --soup " + ",".join(soup))
    else:
        commands = ["python -m training.retriever.train_dpr_nq " + _recipe_flags(files.variant)]
    if not files.question_side:
        return [
            *commands,
            f"python -m training.retriever.convert to-dpr {run}/best/question_encoder {model} --passage "
            f"{run}/best/passage_encoder --fp16",
        ]
    commands.append(
        f"python -m training.retriever.convert question-only {run}/final {model}/question_encoder --paired-with bundled:all-MiniLM-L6-v2 --fp16"
    )
    if shipped:
        commands.append(
            f"python -m training.retriever.evaluate --system {model}/question_encoder "
            "--questions nq/dev.jsonl,squad/dev.jsonl --out EVAL.json   # the float16 row"
        )
    return commands


def _soup_note(runs: list[Path], soup: list[str] | None) -> str:
    """The paragraph naming a soup's runs (empty for a single run)."""
    if not soup:
        return ""
    names = ", ".join(f"`{name}`" for name in soup)
    return (
        f"The model is the uniform average of the question encoders of {len(runs)} runs (a model soup, Wortsman et al. "
        f"2022; the runs were picked after seeing their dev numbers): {names}.\n\n"
    )


def _recipe_values(files: RunFiles, soup: list[str] | None) -> dict[str, object]:
    """The placeholders of the data, settings and cost sentences."""
    config, result, variant = files.config, files.result, files.variant
    squad = variant.get("squad_questions", 0)
    nq_questions = result["examples"] - (squad if variant.get("multi") else 0)
    questions = f"the {nq_questions:,} questions of `nq/train.jsonl`" + (
        f" and {squad:,} of `squad/train-v1.1.json` (seeded sample), in one mix" if squad else ""
    )
    negatives = (
        "BM25's and zero-shot MiniLM's hard negatives interleaved (top 100 of each, MiniLM's first "
        f"{files.mined.get('skip_dense_top', 0)} left out)"
        if variant.get("dense_negatives", False)
        else "BM25 hard negatives (top 100 of BM25)"
    )
    return {
        "questions": questions,
        "num_negatives": files.mined["mining"]["num_negatives"],
        "negatives": negatives,
        "sampled": variant["negatives"],
        "of_first_run": " (of the first run)" if soup else "",
        "batch_size": variant["batch_size"],
        "similarity": config["similarity"],
        "epochs": variant["epochs"],
        "steps": result["steps"],
        "learning_rate": f"{config['learning_rate']:g}",
        "warmup": f"{config['warmup_ratio']:.0%}",
        "max_grad_norm": f"{config['max_grad_norm']:g}",
        "dropout": f"{config['dropout']:g}",
        "max_length": config["max_length"],
        "precision": "bf16 autocast" if config["bf16"] else "fp32",
        "passage_fixed": ", passage encoder fixed (question-side training, training/README.md)"
        if files.question_side
        else "",
        "selection": _selection(config, result, squad),
        "examples_per_second": f"{result['examples_per_second']:.1f}",
        "peak_gb": f"{result['peak_rss_mb'] / 1024:.1f}",
    }


def _selection(config: dict[str, Any], result: dict[str, Any], squad: int) -> str:
    """How the checkpoint was chosen: the final step, or the best validation MRR."""
    if squad:
        return f"Reported at its final step ({result['steps']} steps)."
    validation = result.get("last_validation") or {}
    return (
        f"Selected by MRR on {config['val_questions']} nq/dev questions against {config['val_pool_size']:,} sampled "
        f"pool passages: MRR {validation.get('mrr', float('nan')):.3f}, top-1 {validation.get('top1', float('nan')):.1f} "
        f"at step {result.get('best_step')}."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="models/dpr-minilm-multi", help="the committed model folder")
    parser.add_argument(
        "--run",
        default="runs/dpr-nq/qside-multi-nqall-squad40000-bs32-hn4dense-cosine-e1-lr2e-05",
        help="its training run or soup folder",
    )
    parser.add_argument("--report", default="docs/training/dpr_nq.json")
    parser.add_argument("--hybrid", default="docs/training/hybrid/retrieval_quality.json")
    parser.add_argument(
        "--shipped-eval", help="training.retriever.evaluate's JSON for the committed copy (its float16 weights)"
    )
    parser.add_argument(
        "--passed-over",
        default="",
        help="comma-separated runs or soups of the report compared on dev and not picked (listed too)",
    )
    args = parser.parse_args(argv)
    hybrid_file = Path(args.hybrid)
    hybrid = json.loads(hybrid_file.read_text(encoding="utf-8")) if hybrid_file.is_file() else None
    shipped = read_run_file(Path(args.shipped_eval)) if args.shipped_eval else None
    passed_over = [name for name in args.passed_over.split(",") if name]
    card = render(Path(args.model), Path(args.run), read_run_file(Path(args.report)), hybrid, shipped, passed_over)
    atomic_write_text(Path(args.model) / "README.md", card)
    print(f"wrote {Path(args.model) / 'README.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
