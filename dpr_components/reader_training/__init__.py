"""Span reader training (Karpukhin et al. 2020, section 6), laid out as the bi-encoder's
(:mod:`dpr_components.encoder_training`): ``settings`` (the run's settings), ``data`` (mined
questions and their passages), ``batching`` (one question's rows), ``model`` (where training starts),
``loss``, ``task`` (what the shared loop of :mod:`dpr_components.runs` runs each step),
``checkpoints``, ``evaluate`` (dev exact match and F1), ``export``, ``train`` (a whole run), the record a
trained reader carries (``model_record``, its ``reader_info.json``) and its model card (``model_card``).

The inference reader (``SpanReader``, its model files and decoding) lives in
:mod:`dpr_components.readers`."""
