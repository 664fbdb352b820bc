"""``python -m dpr_components.cli``: the ``haystack`` command."""

import sys

from dpr_components.cli.launch import main

sys.exit(main())
