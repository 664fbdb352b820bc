"""The ``haystack`` command line (``dpr_components.cli.launch:main``). The library never imports this package."""

import os

# Set before any submodule imports Haystack, which reads it at import time.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
