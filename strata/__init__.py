"""Strata: a GraphRAG memory for a corpus.

This package is the shell shared by every stage: typed settings, domain records, the graph-store port and its
backends, and at the top of the import order the application services, the CLI and the HTTP API.
"""

__version__ = "0.1.0"
