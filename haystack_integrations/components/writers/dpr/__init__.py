"""PassageWriter: writes embedded passages to a store, with its encoder stamped. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "passage_writer": ["PassageWriter"],
}

if TYPE_CHECKING:
    from .passage_writer import PassageWriter as PassageWriter
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
