"""DPR bi-encoder training, laid out as the reader's (:mod:`dpr_components.reader_training`):
``settings`` (the run's settings), ``batching`` (a step's
batches), ``model`` (the question/passage encoder pair), ``losses``, ``task`` (what the shared loop
of :mod:`dpr_components.runs` runs each step), ``checkpoints``, ``validation``, ``export`` (Hugging
Face DPR layout) and ``train`` (a whole run). Only the bi-encoder needs the rest: ``negatives``
(hard negatives, BM25 or dense mining), ``step`` and ``grad_cache`` (the backward pass),
``distributed`` and ``launch`` (DDP), ``frozen_passages`` (question-side training), ``averaging``,
``convert``, the model card of a trained pair (``model_card``) and the ``DPRTrainer`` component.

The data both trainers read (DPR and SQuAD files, examples, selection splits, teacher scores) is
:mod:`dpr_components.dpr_data`.

The run mechanics (settings and their checks, run folder, schedule, optimizer, generator states,
checkpoint files, steps that are not finite, the training state, the log and the loop itself, the
result) are shared with the reader, in :mod:`dpr_components.runs`.

Modules are imported individually (``from dpr_components.encoder_training.train import train``) so
that loading data does not import torch."""
