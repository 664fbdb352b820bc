"""Recipes of the DPR encoders: training, mining, evaluation over the pool, reports, distillation."""
