"""CorpusReader: a corpus file (JSON lines, TSV, DPR wiki split) as Haystack documents; CorpusFileToDocument: corpus
files given as byte streams, as Haystack's converters take files. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "corpus_file_to_document": ["CorpusFileToDocument"],
    "corpus_reader": ["CorpusReader"],
}

if TYPE_CHECKING:
    from .corpus_file_to_document import CorpusFileToDocument as CorpusFileToDocument
    from .corpus_reader import CorpusReader as CorpusReader
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
