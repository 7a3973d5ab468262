"""Strata's kernel: typed records, the settings root, SQLite helpers and the graph-store port with its backends.

Every other package imports from here; nothing here imports from them.
"""
