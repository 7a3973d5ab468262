"""Search: tokenization, BM25, the embedders and the vector index, metadata filters, weighted RRF, the entity
lexicon and the personalized-PageRank graph walk."""
