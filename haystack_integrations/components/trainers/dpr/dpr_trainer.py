"""Trains question and passage encoders (Karpukhin et al. 2020) on DPR-format data."""

from __future__ import annotations

import logging
from typing import Any

from haystack import component, default_from_dict, default_to_dict

from dpr_components.dpr_data.examples import Ctx, TrainingExample
from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.encoder_training.settings import EncoderTrainingSettings
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.utils.init_parameters import init_parameters
from dpr_components.utils.input_files import check_input_path
from dpr_components.utils.sources import resolve_data_source

# The training settings DPRTrainer takes as parameters of their own (the rest go in ``settings``).
TRAINING_PARAMETERS = "model epochs batch_size negatives learning_rate similarity"

logger = logging.getLogger(__name__)


@component
class DPRTrainer:
    """Trains question and passage encoders (Karpukhin et al. 2020) on DPR-format data.

    :param output_dir: run folder (checkpoints, log, ``best/`` and ``final/`` models). A run
        found there is resumed; a finished one returns its result at once.
    :param model: starting checkpoint: ``bundled:all-MiniLM-L6-v2``, a sentence-transformers,
        BERT or DPR folder.
    :param settings: any other :class:`EncoderTrainingSettings` setting (e.g. ``grad_cache_chunk``,
        ``loss``, ``in_batch``, ``validate_every``, ``patience``).

    Usage example (``pipelines/train_dpr.yml`` runs it from the command line):

    ```python
    trainer = DPRTrainer(output_dir="runs/my-dpr", epochs=1, batch_size=32)
    result = trainer.run(data="my-train.jsonl", dev_data="my-dev.jsonl")
    result["checkpoint"]  # a folder with question_encoder/ and passage_encoder/
    ```
    """

    def __init__(
        self,
        *,
        output_dir: str = "runs/dpr",
        model: str = BUNDLED_MINILM,
        epochs: int = 3,
        batch_size: int = 32,
        negatives: int = 1,
        learning_rate: float = 2e-5,
        similarity: str = "dot",
        settings: dict[str, Any] | None = None,
        progress_bar: bool = True,
    ) -> None:
        self.output_dir, self.model, self.epochs, self.batch_size = output_dir, model, epochs, batch_size
        self.negatives, self.learning_rate, self.similarity = negatives, learning_rate, similarity
        if settings is not None and not isinstance(settings, dict):
            raise ValueError(
                f"DPRTrainer parameter 'settings' must be a mapping of training settings, got {settings!r}"
            )
        self.settings = dict(settings or {})
        self.progress_bar = progress_bar
        self.config = self._config()  # validate now rather than after loading data

    def _config(self) -> EncoderTrainingSettings:
        explicit = init_parameters(self, TRAINING_PARAMETERS)
        clash = sorted(set(explicit) & set(self.settings))
        if clash:
            raise ValueError(f"DPRTrainer: {clash} are parameters of their own; do not repeat them in settings")
        return EncoderTrainingSettings.from_dict({**explicit, **self.settings})

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, **init_parameters(self, f"output_dir {TRAINING_PARAMETERS} settings progress_bar"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DPRTrainer:
        return default_from_dict(cls, data)

    @component.output_types(checkpoint=str, question_model=str, passage_model=str, metrics=dict)
    def run(
        self,
        data: str | None = None,
        examples: list[TrainingExample] | None = None,
        dev_data: str | None = None,
        corpus: str | None = None,
        split: str | None = None,
        output_dir: str | None = None,
    ) -> dict[str, Any]:
        """Train the encoders on ``data`` or on ``examples`` (give exactly one).

        :param data: training data: a file or ``datasets`` source (see ``load_training_examples``).
        :param examples: training examples given directly.
        :param dev_data: dev data in the same formats; enables validation and best-model selection.
        :param corpus: a JSONL/TSV corpus, split into 100-word passages: random negatives and the
            sampled validation pool.
        :param split: the ``datasets`` split of ``data``.
        :param output_dir: the run folder of this call (default: the component's ``output_dir``); a
            run of other settings or data there is refused, so give each such run its own folder.
        :returns: ``checkpoint``: the folder of the best validated model (else the final one), holding
            ``question_encoder/`` and ``passage_encoder/``; ``question_model`` and ``passage_model``:
            those two folders; ``metrics``: ``steps``, ``best_step``, ``best_metric``,
            ``last_validation`` and ``examples_per_second``.
        :raises ValueError: when both or neither of ``data`` and ``examples`` are given, a file is
            outside the input root, a record is malformed, the ``corpus`` file is missing or malformed,
            or there is no training example.
        :raises FileNotFoundError: when a ``data`` or ``dev_data`` file does not exist.
        """
        from dpr_components.encoder_training.negatives import load_corpus_passages
        from dpr_components.encoder_training.train import train

        if (data is None) == (examples is None):
            raise ValueError("DPRTrainer needs exactly one of 'data' (a file) or 'examples'")
        # Every file is checked against the input root before any is read.
        sources = {
            name: check_input_path(resolve_data_source(value), name)
            for name, value in (("data", data), ("dev_data", dev_data), ("corpus", corpus))
            if value is not None
        }
        if data is not None:
            loaded = load_training_examples(sources["data"], split=split)
            logger.info(loaded.summary())
            examples = loaded.examples
        assert examples is not None
        if not examples:
            raise ValueError("DPRTrainer: no training examples (every record lacked a positive passage?)")
        dev = load_training_examples(sources["dev_data"]).examples if dev_data else None
        passages = None
        if corpus:
            passages = [Ctx(p.title, p.text) for p in load_corpus_passages(sources["corpus"])]
        folder = output_dir or self.output_dir
        result = train(self.config, examples, folder, dev, passages, show_progress=self.progress_bar)
        metrics = init_parameters(result, "steps best_step best_metric last_validation examples_per_second")
        return {
            "checkpoint": result.model_dir,
            "question_model": result.question_model,
            "passage_model": result.passage_model,
            "metrics": metrics,
        }
