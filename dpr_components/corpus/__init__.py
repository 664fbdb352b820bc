"""The user's documents before they are indexed: corpus files read with every problem named by file and line
(``files``: our JSONL and DPR's TSV), documents given as data (``records``), the record id rule shared by
both and by the server (``record_ids``), and DPR's split into passages of at most 100 words (``passages``).

The components that read and split (``CorpusReader``, ``DPRPassageSplitter``) are thin classes over it."""
