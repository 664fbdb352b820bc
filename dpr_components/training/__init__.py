"""DPR bi-encoder training: data loaders, BM25 hard-negative mining, losses, GradCache, DDP,
resumable training loop, checkpoints in Hugging Face DPR layout and the ``DPRTrainer`` component.

Modules are imported individually (``from dpr_components.training.trainer import train``) so
that loading data does not import torch."""
