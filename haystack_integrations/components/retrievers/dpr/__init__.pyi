from dpr_components.retrievers.bm25 import BM25Retriever as BM25Retriever
from dpr_components.retrievers.dense import DenseRetriever as DenseRetriever
from dpr_components.retrievers.hybrid import HybridRetriever as HybridRetriever
