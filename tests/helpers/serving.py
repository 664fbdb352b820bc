"""Served-pipeline folders for the serving tests: copies of pipelines/*.yml on the tiny models and a test store."""

from __future__ import annotations

import socket
from pathlib import Path

import yaml

from dpr_components.serving.deployment import pipeline_files
from dpr_components.store_access.serialization import replace_store_paths

ROOT = Path(__file__).resolve().parents[2]
PIPELINES = ROOT / "pipelines"


def write_pipelines(folder: Path, store: Path, encoder: Path, reader: Path, bert: Path, run_dir: Path) -> None:
    """Copies of pipelines/*.yml with the tiny models, the test store and a one-step training run."""
    folder.mkdir()
    settings = {
        "dense.model": str(encoder),
        "embedder.model": str(encoder),
        "embedder.cache_dir": None,
        "embedder.progress_bar": False,
        "reader.model": str(reader),
        "reranker.model": str(reader),
        "ranker.weight": 0.001,
        "hybrid.model": str(encoder),
        "hybrid.weight": 0.001,
        "trainer.model": str(bert),
        "trainer.output_dir": str(run_dir),
        "trainer.epochs": 1,
        "trainer.batch_size": 2,
        "trainer.progress_bar": False,
    }
    for path in pipeline_files(PIPELINES):
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        replace_store_paths(spec, str(store))
        for key, value in settings.items():
            component, parameter = key.split(".")
            params = spec["components"].get(component, {}).get("init_parameters", {})
            if parameter in params:  # "reader" is a SpanReader in qa.yml, a CorpusReader in index.yml
                params[parameter] = value
        if "trainer" in spec["components"]:
            spec["components"]["trainer"]["init_parameters"]["settings"].update(max_length=32, threads=1)
        (folder / path.name).write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
