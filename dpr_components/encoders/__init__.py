"""The encoder engine behind the embedders, retrievers and trainers: model folders and their
checks (``model_files``), loading and encoding text (``text_encoder``, ``plain_bert`` for BERT
without transformers' model code), the E_Q/E_P pairing (``pairing``), one loaded copy per model
(``model_locks``), encoders built from component settings (``factory``) and passage encoding in
batches with a resumable cache (``batch_encoding``, ``embedding_cache``)."""
