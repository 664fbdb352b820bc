"""The question-passage data both trainers read, in one place: training examples (``examples``), DPR's JSON
records (``records``) and SQuAD files (``squad``) loaded with every problem named (``loading``), Hugging Face
``datasets`` as a source (``hf_source``), the pool documents that hold a gold paragraph (``gold_documents``),
the held-aside selection splits of train (``selection_split``) and teacher score files (``teacher_file``).

Nothing here imports torch: reading data is cheap."""
