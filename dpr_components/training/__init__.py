"""DPR bi-encoder training: data loaders, BM25 hard-negative mining, losses, GradCache, DDP,
resumable training loop, checkpoints in Hugging Face DPR layout and the ``DPRTrainer`` component.

The run mechanics are one core shared with the reader's training loop (``readers/training.py``):
``run_folder`` (clean-up after a kill, same-run check, settings file, log), ``schedule`` (linear
warm-up and decay), ``optimizer`` (AdamW), ``rng`` (seeding, generator states as JSON),
``checkpoint_files`` (atomic checkpoint folders, loading that never runs code), ``finite`` (steps
whose loss or gradient norm is NaN or infinite are skipped or stop the run) and ``run_log``.

Modules are imported individually (``from dpr_components.training.trainer import train``) so
that loading data does not import torch."""
