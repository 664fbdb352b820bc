"""Write the model card (README.md) of the committed DPR encoder pair from its training run
and the recipe's reports.

    python -m training.dpr_model_card --model models/dpr-minilm-nq \\
        --run runs/dpr-nq/nqall-bs32-hn1-cosine-e1-lr2e-05

Numbers come from the run folder (``config.json``, ``result.json``, ``log.jsonl``, the mined
data's ``.meta.json``), docs/training/dpr_nq.json (full-pool evaluation) and
docs/training/hybrid/retrieval_quality.json (hybrid with BM25), so the card never disagrees
with them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dpr_components.io_utils import atomic_write_text
from training.model_card import read_json

KS = ("1", "5", "20", "100")
DATASETS = {"nq/dev.jsonl": "NQ dev", "squad/dev.jsonl": "SQuAD dev"}


def _size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def _find(runs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for run in runs:
        if run.get("name") == name:
            return run
    raise SystemExit(f"run {name!r} is not in the report: run `python -m training.train_dpr_nq --stage report`")


def _accuracy_row(label: str, datasets: dict[str, Any]) -> str:
    cells = []
    for dataset in DATASETS:
        scores = datasets.get(dataset, {}).get("top_k", {})
        cells += [f"{scores[k]:.1f}" if k in scores else "" for k in KS]
    return f"| {label} | " + " | ".join(cells) + " |"


def _hybrid_datasets(hybrid: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The pipeline-default hybrid row of each dataset, in the report's shape."""
    label, out = "", {}
    for result in hybrid:
        name = next(n for n in result["full"] if n.startswith("hybrid (pipeline default"))
        label = name
        out[result["dataset"]] = {"top_k": {k: result["full"][name]["top_k_accuracy"][k] for k in KS}}
    return label, out


def render(model: Path, run: Path, report: dict[str, Any], hybrid: list[dict[str, Any]] | None) -> str:
    config = read_json(run / "config.json")["config"]
    result = read_json(run / "result.json")
    variant = read_json(run / "variant.json")
    mined = read_json(run.parent / "data" / "nq-train-bm25.jsonl.meta.json")
    evaluation = _find(report["runs"], run.name)
    baselines = {b["name"]: b for b in report["baselines"]}
    validation = result.get("last_validation") or {}
    header = "| system | " + " | ".join(f"{DATASETS[d]} top-{k}" for d in DATASETS for k in KS) + " |"
    rows = [_accuracy_row(name, baselines[name]["datasets"]) for name in ("bm25", "minilm-zero-shot") if name in baselines]
    rows.append(_accuracy_row(f"**{model.name}**", evaluation["datasets"]))
    if hybrid:
        label, datasets = _hybrid_datasets(hybrid)
        rows.append(_accuracy_row(f"BM25 + {model.name}, {label}", datasets))
    lines = [
        f"# {model.name}: DPR question and passage encoders from all-MiniLM-L6-v2, trained on Natural Questions",
        "",
        "Dense Passage Retrieval (Karpukhin et al. 2020) at CPU scale: two independent encoders, "
        "`question_encoder/` (`DPRQuestionEncoder`) and `passage_encoder/` (`DPRContextEncoder`), both initialised "
        "from all-MiniLM-L6-v2 (6 layers, 384 dimensions, mean pooling, unit-length vectors: scores are cosine "
        f"similarities). Weights in float16 safetensors ({_size_mb(model):.0f} MB with the tokenizers; they load as "
        "float32). The pipelines in `pipelines/` use it by default: `DenseRetriever(model=\".../question_encoder\")` "
        "and `PassageEmbedder(model=\".../passage_encoder\")`. Index passages with the passage encoder: vectors of "
        "another encoder do not match its questions.",
        "",
        "## How it was made",
        "",
        "```bash",
        "python -m training.train_dpr_nq   # mine BM25 negatives, train, evaluate, report (training/README.md)",
        f"python -m training.convert to-dpr {run}/best/question_encoder {model} --passage "
        f"{run}/best/passage_encoder --fp16",
        "```",
        "",
        f"Data: the {result['examples']:,} questions of `nq/train.jsonl`, each with its gold paragraph's 100-word block "
        f"containing an answer as the positive and {mined['mining']['num_negatives']} BM25 negatives mined from the "
        "55,350-passage pool (top 100 of BM25, no answer string, not the positive); one sampled per question per step.",
        "",
        f"Settings: batch {variant['batch_size']} questions + {variant['negatives']} BM25 negative each, in-batch "
        f"negatives, NLL over {config['similarity']} similarity, {variant['epochs']} epoch ({result['steps']} steps), "
        f"AdamW lr {config['learning_rate']:g}, warm-up {config['warmup_ratio']:.0%} then linear decay, gradient "
        f"clipping {config['max_grad_norm']:g}, dropout {config['dropout']:g}, inputs of at most "
        f"{config['max_length']} tokens, {'bf16 autocast' if config['bf16'] else 'fp32'}. Selected by MRR on "
        f"{config['val_questions']} nq/dev questions against {config['val_pool_size']:,} sampled pool passages: "
        f"MRR {validation.get('mrr', float('nan')):.3f}, top-1 {validation.get('top1', float('nan')):.1f} at step "
        f"{result.get('best_step')}.",
        "",
        f"Training cost on the shared 2-core CPU: {result['examples_per_second']:.1f} questions/s on average, peak "
        f"memory {result['peak_rss_mb'] / 1024:.1f} GB.",
        "",
        "## Results (docs/training/dpr_nq.md)",
        "",
        f"Top-k retrieval accuracy over the full 55,350-passage pool, exact inner-product search "
        f"(`{report['command']}`):",
        "",
        header,
        "|---|" + "---:|" * (len(header.split("|")) - 3),
        *rows,
        "",
        "## Licence and data",
        "",
        "Derived from all-MiniLM-L6-v2 (Apache-2.0). Trained on Natural Questions (CC BY-SA 3.0) with passages "
        "from English Wikipedia (CC BY-SA).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="models/dpr-minilm-nq", help="the committed encoder pair")
    parser.add_argument("--run", default="runs/dpr-nq/nqall-bs32-hn1-cosine-e1-lr2e-05", help="its training run")
    parser.add_argument("--report", default="docs/training/dpr_nq.json")
    parser.add_argument("--hybrid", default="docs/training/hybrid/retrieval_quality.json")
    args = parser.parse_args(argv)
    hybrid_file = Path(args.hybrid)
    hybrid = json.loads(hybrid_file.read_text(encoding="utf-8")) if hybrid_file.is_file() else None
    card = render(Path(args.model), Path(args.run), read_json(Path(args.report)), hybrid)
    atomic_write_text(Path(args.model) / "README.md", card)
    print(f"wrote {Path(args.model) / 'README.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
