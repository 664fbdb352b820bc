from dpr_components.indexing.writer import PassageWriter as PassageWriter
