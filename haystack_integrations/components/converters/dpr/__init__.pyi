from dpr_components.indexing.components import CorpusReader as CorpusReader
