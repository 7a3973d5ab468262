"""Text primitives that every layer shares: folding, scripts, the shapes of values (numerals, names, paths, code
spans) and Chinese segmentation. One implementation of each, low in the tree, so that extraction, search and the
reader read text the same way."""
