"""Prompt templates for the LLM extraction and report paths.

This version runs offline only (the deterministic extractor and the extractive summarizer need no prompts),
so the package holds no templates yet.
"""
