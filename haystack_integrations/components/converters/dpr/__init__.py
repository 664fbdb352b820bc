"""CorpusReader: a corpus file (JSON lines, TSV, DPR wiki split) as Haystack documents. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "corpus_reader": ["CorpusReader"],
}

if TYPE_CHECKING:
    from .corpus_reader import CorpusReader as CorpusReader
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
