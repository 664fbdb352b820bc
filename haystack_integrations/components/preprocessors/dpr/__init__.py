"""DPRPassageSplitter: documents cut into DPR's 100-word passages; FileDocumentChecker: the converted files of a
folder made ready to split, those without text named. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "dpr_passage_splitter": ["DPRPassageSplitter"],
    "file_document_checker": ["FileDocumentChecker"],
}

if TYPE_CHECKING:
    from .dpr_passage_splitter import DPRPassageSplitter as DPRPassageSplitter
    from .file_document_checker import FileDocumentChecker as FileDocumentChecker
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
