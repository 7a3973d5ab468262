"""Routing: whether a question is local (the fused chunk search) or global (the community reports), with its
reasons and its calibrated confidence; the router's model, its training and its LLM classifier."""
