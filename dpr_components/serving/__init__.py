"""``haystack serve``: the pipelines of a folder over HTTP (hayhooks) and the ask page (docs/serving.md).

``app`` builds the app from the files ``deployment`` can serve, each behind the typed wrapper of its
kind (``wrappers``, training as background ``jobs``), with the request and response ``models``, the
``routes`` and the ``ask_page`` (its files in ``page/``); ``security`` is who may call the server,
enforced by the middlewares of ``guards``; ``server`` runs it. The command line's ``serve`` options
are read in ``dpr_components.cli.serve_command``."""
