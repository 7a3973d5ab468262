"""Answers: the reader that picks the units which answer a question (or declines), and the local, global and
both-sides answers, offline and with an LLM, each citing its chunks."""
