"""``backend="auto"``: which back end runs an encoder, decided once per process and logged.

Passages (batches, where throughput counts) go to OpenVINO when it is installed, supports the
checkpoint and passes the project's accuracy bound on this CPU: OpenVINO was the fastest exact back
end on every CPU kind measured (docs/benchmarks/encoding/backends.md, backends_avx2.md). The bound is checked
here, not assumed: a few probe passages are encoded by OpenVINO at the encoder's precision and by
torch in fp32, and every vector pair must have a cosine of at least :data:`COSINE_BOUND`.

Questions (one at a time, where start-up counts) stay on plain torch: OpenVINO's conversion costs
seconds at start-up for a saving of about a millisecond per question
(docs/benchmarks/encoding/question_backends.md).

``DPR_ENCODE_BACKEND=torch|openvino`` overrides ``auto`` for the whole process (questions too; a
checkpoint OpenVINO cannot run stays on torch, so one setting serves a whole pipeline); a component's
explicit ``backend`` overrides both.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

ENV_VARIABLE = "DPR_ENCODE_BACKEND"
COSINE_BOUND = 0.999  # the project's accuracy bound to torch fp32 (docs/benchmarks/encoding/encoding.md)
ResolvedBackend = Literal["torch", "openvino"]

# Written for this check: lengths from a few tokens to past a 256-token window, with and without titles.
_SENTENCE = (
    "The river rises in the northern hills, runs south past three market towns and a cathedral city, "
    "and reaches the sea at a wide estuary where ships have anchored since the fourteenth century. "
)
PROBE_PASSAGES: tuple[tuple[str | None, str], ...] = (
    ("Probe", "A short passage."),
    (None, "Seven is a prime number; eight is not."),
    ("River", _SENTENCE),
    ("Harbour", _SENTENCE * 2 + "Its harbour was rebuilt in 1887 after a storm destroyed the old quay."),
    (None, "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen. " * 4),
    ("Long", _SENTENCE * 12),
    ("Numbers", "In 1969, 1,024 delegates met; 37.5% voted yes, 12 abstained and the rest voted no."),
    ("Names", "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911."),
)


@dataclass(frozen=True)
class BackendChoice:
    """The back end ``auto`` stands for, and why."""

    backend: ResolvedBackend
    reason: str


_choices: dict[tuple[Hashable, bool], BackendChoice] = {}
_lock = threading.Lock()


def env_backend() -> ResolvedBackend | None:
    """The back end ``DPR_ENCODE_BACKEND`` asks for, or None when it is unset or ``auto``."""
    value = os.environ.get(ENV_VARIABLE, "").strip().lower()
    if value in ("", "auto"):
        return None
    if value not in ("torch", "openvino"):
        raise ValueError(f"{ENV_VARIABLE} must be auto, torch or openvino, got {os.environ[ENV_VARIABLE]!r}")
    return "openvino" if value == "openvino" else "torch"


def openvino_installed() -> bool:
    return importlib.util.find_spec("openvino") is not None


@dataclass(frozen=True)
class OpenVINOTrial:
    """What ``auto`` asks of OpenVINO for one encoder: why it cannot run the checkpoint (None: it can),
    and the lowest cosine of its probe vectors to torch fp32's (:data:`PROBE_PASSAGES`)."""

    unsupported: Callable[[], str | None]
    probe_cosine: Callable[[], float]


def resolve_backend(
    backend: str, key: Hashable, model: str, for_questions: bool, trial: OpenVINOTrial
) -> BackendChoice:
    """What ``backend`` stands for here; ``auto`` is decided and logged once per process and ``key``
    (the encoder's settings)."""
    if backend != "auto":
        return BackendChoice("openvino" if backend == "openvino" else "torch", "set explicitly")
    with _lock:
        if (key, for_questions) not in _choices:
            choice = _decide(for_questions, trial)
            _log(choice, model, for_questions)
            _choices[key, for_questions] = choice
        return _choices[key, for_questions]


def _log(choice: BackendChoice, model: str, for_questions: bool) -> None:
    """One line per decision: a warning when OpenVINO was refused, info for passages, debug for questions."""
    if choice.reason.startswith("OpenVINO failed"):
        level = logging.WARNING
    else:
        level = logging.DEBUG if for_questions else logging.INFO
    logger.log(
        level,
        "%s encoder %s: backend auto runs on %s (%s); override with backend='torch' or 'openvino', or %s",
        "question" if for_questions else "passage",
        model,
        choice.backend,
        choice.reason,
        ENV_VARIABLE,
    )


def _decide(for_questions: bool, trial: OpenVINOTrial) -> BackendChoice:
    requested = env_backend()
    if requested == "torch":
        return BackendChoice("torch", f"{ENV_VARIABLE}=torch")
    if requested is None and for_questions:
        return BackendChoice("torch", "questions come one at a time and plain torch starts fastest")
    if requested is None and not openvino_installed():
        return BackendChoice("torch", "the openvino package is not installed")
    unsupported = trial.unsupported()
    if unsupported:  # also under DPR_ENCODE_BACKEND=openvino: it must not stop a pipeline's other encoders
        return BackendChoice("torch", unsupported)
    if requested == "openvino":
        return BackendChoice("openvino", f"{ENV_VARIABLE}=openvino")
    try:
        cosine = trial.probe_cosine()
    except Exception as error:  # noqa: BLE001 - any conversion failure means: stay on torch, say why
        return BackendChoice("torch", f"OpenVINO failed on this model: {type(error).__name__}: {error}")
    if cosine < COSINE_BOUND:
        return BackendChoice(
            "torch",
            f"OpenVINO failed the accuracy bound here: cosine {cosine:.5f} to torch fp32, under {COSINE_BOUND}",
        )
    return BackendChoice("openvino", f"the fastest exact back end here; cosine {cosine:.5f} to torch fp32")


def lowest_cosine(candidate: np.ndarray, reference: np.ndarray) -> float:
    """The lowest cosine between the rows of two matrices of the same shape."""
    import numpy as np  # not at the top: the command line checks DPR_ENCODE_BACKEND before loading anything heavy

    dots = np.einsum("ij,ij->i", candidate, reference)
    norms = np.linalg.norm(candidate, axis=1) * np.linalg.norm(reference, axis=1)
    return float(np.min(dots / np.maximum(norms, 1e-12)))


def forget_choices() -> None:
    """Decide again on next use (tests, or after changing ``DPR_ENCODE_BACKEND``)."""
    with _lock:
        _choices.clear()
