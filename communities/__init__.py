"""Communities: hierarchical Leiden, stable community identity, community reports, fingerprints and drift."""
