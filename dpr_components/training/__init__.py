"""Old home of the bi-encoder trainer, kept so pipeline files naming
``dpr_components.training.component.DPRTrainer`` still load; the trainer lives in
:mod:`dpr_components.encoder_training`."""
