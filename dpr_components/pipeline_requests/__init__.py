"""A request to a loaded pipeline, the same through every front end (the ``haystack`` command, the
HTTP server, the LangChain retriever): where its fields go (``inputs``), the run with its inputs
checked (``running``) and the user errors it may end in, on one line (``errors``)."""
