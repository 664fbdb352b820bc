"""The package layout: components by role, the command line apart, old pipeline type paths still loading."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Pipeline

from dpr_components.legacy.type_paths import LEGACY_TYPE_PATHS

REPO = Path(__file__).resolve().parents[1]

# Every component type path the pipeline files used before the layout by role.
OLD_TYPE_PATHS = [
    "dpr_components.retrievers.DenseRetriever",
    "dpr_components.retrievers.BM25Retriever",
    "dpr_components.ranker.HybridRanker",
    "dpr_components.embedders.PassageEmbedder",
    "dpr_components.embedders.QuestionEmbedder",
    "dpr_components.reader.span_reader.SpanReader",
    "dpr_components.evaluation.evaluators.RetrievalAccuracyEvaluator",
    "dpr_components.evaluation.evaluators.AnswerExactMatchF1Evaluator",
    "dpr_components.indexing.components.CorpusReader",
    "dpr_components.indexing.components.DPRPassageSplitter",
    "dpr_components.training.component.DPRTrainer",
]

NEEDS_STORE = {"DenseRetriever", "BM25Retriever", "HybridRanker"}

LIBRARY_IMPORTS_ALL = """
import importlib, pathlib, sys
package = pathlib.Path("dpr_components")
for path in sorted(package.rglob("*.py")):
    parts = path.with_suffix("").parts
    if "cli" in parts[1:2]:
        continue
    importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
leaked = sorted(name for name in sys.modules if name == "dpr_components.cli" or name.startswith("dpr_components.cli."))
print(leaked)
sys.exit(1 if leaked else 0)
"""


def _component(type_path: str, store_path: Path) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if type_path.rsplit(".", 1)[1] in NEEDS_STORE:
        params["document_store"] = {
            "type": "dpr_components.document_stores.embedded.EmbeddedDocumentStore",
            "init_parameters": {"path": str(store_path)},
        }
    return {"type": type_path, "init_parameters": params}


def test_library_never_imports_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LIBRARY_IMPORTS_ALL], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert done.returncode == 0, f"library modules imported {done.stdout.strip()}\n{done.stderr[-2000:]}"


@pytest.mark.parametrize("old_path", OLD_TYPE_PATHS)
def test_old_type_path_loads_in_plain_haystack(old_path: str, tmp_path: Path) -> None:
    data = {"components": {"node": _component(old_path, tmp_path / "store")}, "connections": []}
    pipeline = Pipeline.from_dict(data, allowed_modules=["dpr_components"])
    instance = pipeline.get_component("node")
    assert type(instance).__name__ == old_path.rsplit(".", 1)[1]
    # Saved again, the pipeline names the class by its current path.
    current = LEGACY_TYPE_PATHS.get(old_path, old_path)
    assert pipeline.to_dict()["components"]["node"]["type"] == current


@pytest.mark.parametrize("current_path", sorted(set(LEGACY_TYPE_PATHS.values())))
def test_current_type_path_loads_in_plain_haystack(current_path: str, tmp_path: Path) -> None:
    data = {"components": {"node": _component(current_path, tmp_path / "store")}, "connections": []}
    pipeline = Pipeline.from_dict(data, allowed_modules=["dpr_components"])
    assert pipeline.to_dict()["components"]["node"]["type"] == current_path


def test_pipeline_files_name_current_paths_only() -> None:
    for path in sorted((REPO / "pipelines").glob("*.yml")):
        components = yaml.safe_load(path.read_text(encoding="utf-8"))["components"]
        for name, spec in components.items():
            assert spec["type"] not in LEGACY_TYPE_PATHS, f"{path.name}: component {name!r} uses an old type path"


def test_packages_re_export_their_components() -> None:
    from dpr_components.document_stores import EmbeddedDocumentStore
    from dpr_components.embedders import PassageEmbedder, QuestionEmbedder
    from dpr_components.evaluators import (
        AnswerExactMatchF1Evaluator,
        RetrievalAccuracyEvaluator,
    )
    from dpr_components.rankers import HybridRanker
    from dpr_components.readers import SpanReader
    from dpr_components.retrievers import BM25Retriever, DenseRetriever
    from dpr_components.training.component import DPRTrainer

    modules = {cls.__module__ for cls in (
        EmbeddedDocumentStore, PassageEmbedder, QuestionEmbedder, AnswerExactMatchF1Evaluator,
        RetrievalAccuracyEvaluator, HybridRanker, SpanReader, BM25Retriever, DenseRetriever, DPRTrainer,
    )}
    assert modules == {
        "dpr_components.document_stores.embedded", "dpr_components.embedders.passage",
        "dpr_components.embedders.question", "dpr_components.evaluators.answer_exact_match",
        "dpr_components.evaluators.retrieval_accuracy", "dpr_components.rankers.hybrid",
        "dpr_components.readers.span_reader", "dpr_components.retrievers.bm25", "dpr_components.retrievers.dense",
        "dpr_components.training.component",
    }


def test_command_line_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dpr_components.cli", "--help"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "usage: haystack" in done.stdout


IMPORT_COST = """
import sys
import dpr_components.retrievers.bm25
from dpr_components.retrievers import BM25Retriever
heavy = sorted({name.split(".")[0] for name in sys.modules} & {"faiss", "transformers", "sentence_transformers"})
print(heavy)
sys.exit(1 if heavy else 0)
"""


def test_bm25_retriever_loads_neither_faiss_nor_transformers() -> None:
    done = subprocess.run([sys.executable, "-c", IMPORT_COST], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, f"importing BM25Retriever loaded {done.stdout.strip()}\n{done.stderr[-2000:]}"


def test_old_type_paths_load_nothing_until_used() -> None:
    """Registering the old paths of a package face builds none of its classes."""
    check = (
        "import sys; from haystack import component; import dpr_components.retrievers; "
        "assert 'dpr_components.retrievers.DenseRetriever' in component.registry; "
        "sys.exit(1 if 'dpr_components.retrievers.dense' in sys.modules else 0)"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
