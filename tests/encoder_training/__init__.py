"""DPR encoder training: data, losses, negatives, checkpoints, distributed and question-side runs."""
