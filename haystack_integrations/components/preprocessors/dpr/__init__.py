"""DPRPassageSplitter: documents cut into DPR's 100-word passages. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "dpr_passage_splitter": ["DPRPassageSplitter"],
}

if TYPE_CHECKING:
    from .dpr_passage_splitter import DPRPassageSplitter as DPRPassageSplitter
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
