"""The span reader of the DPR paper (§6): passage selection and answer spans. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "span_reader": ["SpanReader"],
}

if TYPE_CHECKING:
    from .span_reader import SpanReader as SpanReader
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
