"""Retrieval: tokenization, BM25, embedders, the vector index, weighted RRF, the router and the answer paths."""
