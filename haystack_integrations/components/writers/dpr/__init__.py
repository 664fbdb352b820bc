"""PassageWriter: writes embedded passages to a store, with its encoder stamped; FolderSync: keeps a store in step
with a folder (new, changed and gone files). Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "folder_sync": ["FolderSync"],
    "passage_writer": ["PassageWriter"],
}

if TYPE_CHECKING:
    from .folder_sync import FolderSync as FolderSync
    from .passage_writer import PassageWriter as PassageWriter
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
