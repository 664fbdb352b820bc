"""FolderFetcher: the documents of a folder as byte streams, each with its path, type, time and hash. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "folder_fetcher": ["FolderFetcher"],
}

if TYPE_CHECKING:
    from .folder_fetcher import FolderFetcher as FolderFetcher
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
