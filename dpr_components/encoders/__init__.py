"""The encoder engine behind the embedders, retrievers and trainers: model folders, their layout and
checks (``model_files``, ``model_layout``, ``bundled``), the encoder's settings (``encoder_settings``),
loading (``transformers_loading``, ``plain_bert`` for BERT without transformers' model code,
``openvino_model`` for the OpenVINO back end chosen by ``backend_choice``), pooling (``pooling``),
encoding text (``text_encoder``), the E_Q/E_P pairing (``pairing``), one loaded copy per model
(``model_locks``) and passage encoding in
batches with a resumable cache (``batch_encoding``, ``embedding_cache``)."""
