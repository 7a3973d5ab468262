"""Extraction: loading documents, chunking, entity/relation extraction (offline and LLM) and entity resolution."""
