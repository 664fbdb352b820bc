"""The pipelines that ship with the package, by name: ``index``, ``index_files`` (a folder of documents),
``bm25``, ``dense``, ``search`` (the hybrid), ``search_rerank``, ``qa``, ``qa_fast``, ``qa_rerank``, ``eval_nq``,
``eval_squad``, ``train_dpr`` and the Elasticsearch variants.

They name their models as ``bundled:`` references (installed with the package) and their store
folder relative to the working directory (``indexes/example``); ``store`` replaces it.

```python
from dpr_components.packaged import load_pipeline

load_pipeline("index", store="my_store").run({"reader": {"path": "corpus.jsonl"}})
qa = load_pipeline("qa", store="my_store")
question = {"query": "who wrote hamlet"}
qa.run({"hybrid": question, "reranker": question, "reader": question})
```

The files load with plain Haystack too, no allowlist needed:
``Pipeline.loads(packaged_pipeline_path("qa").read_text())``. On the command line,
``haystack run qa --store my_store -q "who wrote hamlet"``."""

from __future__ import annotations

from pathlib import Path

import yaml
from haystack import Pipeline

from dpr_components.store_access.serialization import replace_store_paths
from dpr_components.utils.extras import check_pipeline_extras

PIPELINES_DIR = Path(__file__).resolve().parent / "pipelines"
SUFFIX = ".yml"


def packaged_pipeline_names() -> list[str]:
    """The names of the pipelines that ship with the package."""
    return sorted(path.stem for path in PIPELINES_DIR.glob(f"*{SUFFIX}"))


def is_packaged_name(name: str) -> bool:
    """Whether ``name`` has the shape of a packaged pipeline's name (``qa`` or ``qa.yml``), not of a path."""
    return bool(name) and "/" not in name and "\\" not in name and not name.startswith(".")


def packaged_pipeline_path(name: str) -> Path:
    """The file of the packaged pipeline ``name`` (``qa`` or ``qa.yml``); KeyError listing the names if none,
    TypeError if ``name`` is not a string."""
    if not isinstance(name, str):
        raise TypeError(
            f"name must be the name of a packaged pipeline, got {name!r} ({type(name).__name__}); "
            f"the packaged pipelines are {', '.join(packaged_pipeline_names())}"
        )
    stem = name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name
    path = PIPELINES_DIR / f"{stem}{SUFFIX}"
    if not is_packaged_name(name) or not path.is_file():
        raise KeyError(
            f"no packaged pipeline {name!r}; the packaged pipelines are {', '.join(packaged_pipeline_names())}"
        )
    return path


def load_pipeline(name: str, store: str | Path | None = None) -> Pipeline:
    """Build the packaged pipeline ``name`` with plain Haystack; ``store`` replaces its store folder.
    A ``name`` that is not a packaged pipeline's is a TypeError or KeyError listing the names."""
    if store is not None and not isinstance(store, (str, Path)):
        raise TypeError(f"store must be a folder's path (str or Path), got {type(store).__name__}")
    data = yaml.safe_load(packaged_pipeline_path(name).read_text(encoding="utf-8"))
    if store is not None and replace_store_paths(data, str(store)) == 0:
        raise ValueError(f"the packaged pipeline {name!r} uses no EmbeddedDocumentStore to point at {str(store)!r}")
    check_pipeline_extras(data["components"], f"the packaged pipeline {name!r}")  # one line, not Haystack's 20
    return Pipeline.from_dict(data)
