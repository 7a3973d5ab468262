"""The query side: answer questions and run memory queries over the published index generation.

The engine holds one loaded generation (:class:`strata.generations.QuerySnapshot`). Each request takes the
current one at its start and finishes on it, whatever happens meanwhile. A serving engine (``watch=True``)
checks the workspace's ``CURRENT`` pointer with one stat every ``index.reload_poll_s`` seconds, loads a newer
generation in the background and swaps it in whole; the old one is closed once no request is using it.

Nothing here imports Prefect, so ``strata ask``, ``strata search`` and the HTTP API start quickly.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from core.records import Report
from core.settings import StrataSettings
from answers.answer import Answer, local_answer
from answers.both import both_sides_answer
from answers.global_answer import about_the_whole, global_answer, pick_level
from retrieval.contract import MemoryQueryRequest, MemoryQueryResponse, MemoryResult
from retrieval.hits import SearchOutcome
from retrieval.index import ChunkIndex
from routing.router import named_only, with_graph_seeds
from retrieval.lexicon import EntityLexicon
from routing.router import Route, Router, forced
from strata.generations import QuerySnapshot, load_generation
from strata.integrity import GenerationDamagedError
from strata.topics import whole_corpus_reports
from strata.stages import open_llm
from strata.workspace import GenerationPaths, Lease, Workspace

if TYPE_CHECKING:
    from core.llm_client import LLMClient


class FilterNotApplicable(ValueError):
    """A metadata filter with a question routed to the community reports, which summarize the whole corpus and
    cannot honour it."""

    def __init__(self, message: str = "a metadata filter applies to local answers only (a global answer "
                                      "summarizes the whole corpus)") -> None:
        super().__init__(message)


class NoIndexError(FileNotFoundError):
    """No generation has been published in the workspace yet."""


class Engine:
    """The query side over one workspace's published generations."""

    def __init__(self, settings: StrataSettings, watch: bool = False) -> None:
        self.settings = settings
        self.ws = Workspace(Path(settings.data_dir))
        self.mode = settings.llm_mode
        self._client: "LLMClient | None" = None
        self._lock = threading.Lock()
        self._users: dict[int, int] = {}  # generation number -> requests using it
        self._retired: list[QuerySnapshot] = []
        self._routers: dict[int, Router] = {}  # generation number -> the router over its index
        self._lease = Lease(self.ws)
        paths = self.ws.current()
        if paths is None:
            if (self.ws.root / "index" / "index.json").exists():  # the layout before index generations
                raise NoIndexError(f"{self.ws.root}: the index here was written by an older version of Strata and "
                                   "has no published generation; run `strata index <folder>` once to publish one")
            if self.ws.numbers():  # CURRENT lost or garbled, and no generation is intact
                raise NoIndexError(f"{self.ws.root}: no intact index generation to serve (CURRENT names none, and "
                                   f"every one in {self.ws.generations_dir} is damaged); run `strata index <folder>` "
                                   "to rebuild one")
            raise NoIndexError(f"{self.ws.root}: no index here yet; run `strata index <folder>` first")
        self._stamp = self.ws.current_stamp()
        self._current = self._load_leased(paths)
        self.reload_error: str | None = None
        self.reloaded_at = time.time()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        if watch:
            self._watcher = threading.Thread(target=self._watch, name="strata-generation-watch", daemon=True)
            self._watcher.start()

    # -- generations --------------------------------------------------------------------------------------
    @property
    def current(self) -> QuerySnapshot:
        return self._current

    @property
    def generation(self) -> int:
        return self._current.number

    @property
    def index(self) -> ChunkIndex:
        return self._current.index

    @property
    def lexicon(self) -> EntityLexicon:
        return self._current.lexicon

    def reports(self):  # type: ignore[no-untyped-def]
        return self._current.reports

    def check_reload(self) -> bool:
        """Load and swap in a newer published generation if there is one; True when it swapped."""
        stamp = self.ws.current_stamp()
        if stamp is None or stamp == self._stamp:
            return False
        paths = self.ws.current()
        if paths is None or paths.number == self._current.number:
            self._stamp = stamp
            return False
        try:
            # Leased before it is read, so a writer's prune spares it while it loads.
            self._lease.hold(paths.number, self._current.number, *(s.number for s in self._retired))
            fresh = load_generation(paths, self.settings)
        except (OSError, ValueError, KeyError) as exc:  # e.g. pruned between the stat and the lease: retry later
            self.reload_error = f"generation {paths.number}: {exc}"
            with self._lock:
                self._hold_lease()
            return False
        with self._lock:
            old, self._current, self._stamp = self._current, fresh, stamp
            self._retired.append(old)
            self._hold_lease()
        self.reload_error, self.reloaded_at = None, time.time()
        self._close_idle()
        return True

    def _watch(self) -> None:
        while not self._stop.wait(self.settings.index.reload_poll_s):
            try:
                self.check_reload()
            except Exception as exc:  # the watcher must outlive any one bad generation
                self.reload_error = f"{type(exc).__name__}: {exc}"
            self._close_idle()

    def _load_leased(self, paths: GenerationPaths) -> QuerySnapshot:
        """Lease the published generation, then load it. A prune can only have removed it between reading
        ``CURRENT`` and taking the lease, when newer ones were published meanwhile: then the newest is taken."""
        for _ in range(5):
            self._lease.hold(paths.number)
            try:
                return load_generation(paths, self.settings)
            except (FileNotFoundError, GenerationDamagedError):  # pruned (files going) meanwhile, or damaged
                newer = self.ws.current()
                if newer is None or newer.number == paths.number:
                    raise
                paths, self._stamp = newer, self.ws.current_stamp()
        return load_generation(paths, self.settings)

    def _hold_lease(self) -> None:
        """Lease the served generation and every retired one a request still uses (called under the lock), so
        that a writer's prune spares them."""
        self._lease.hold(self._current.number, *(s.number for s in self._retired))

    def _close_idle(self) -> None:
        with self._lock:
            idle = [s for s in self._retired if not self._users.get(s.number)]
            self._retired = [s for s in self._retired if self._users.get(s.number)]
            if idle:
                self._hold_lease()
        for snap in idle:
            snap.close()

    def acquire(self) -> QuerySnapshot:
        """The generation a request runs on, held until :meth:`release`."""
        with self._lock:
            snap = self._current
            self._users[snap.number] = self._users.get(snap.number, 0) + 1
            return snap

    def release(self, snap: QuerySnapshot) -> None:
        with self._lock:
            left = self._users.get(snap.number, 1) - 1
            if left:
                self._users[snap.number] = left
            else:
                self._users.pop(snap.number, None)

    # -- answering ----------------------------------------------------------------------------------------
    def route(self, question: str, mode: Route | None = None, snap: QuerySnapshot | None = None):  # type: ignore[no-untyped-def]
        """The route for ``question``: the offline router over this generation's index, then, when it is unsure
        and an LLM is configured, the LLM classifier."""
        snap = snap or self._current
        router = self._routers.get(snap.number)
        if router is None:
            router = Router.for_index(snap.index, snap.lexicon)
            with self._lock:  # one router per generation still in use
                live = {self._current.number, *(r.number for r in self._retired), snap.number}
                self._routers = {n: r for n, r in self._routers.items() if n in live} | {snap.number: router}
        decision = router.route(question, has_reports=snap.has_reports)
        # The walk's link, made once: by names and the question's vector as a search makes it, or by names alone
        # for a route the caller set (which shows no seeds, so embeds nothing here); None without a walk.
        walk = snap.index.graph_walk
        link = None if walk is None else walk.link(question) if mode else snap.index.graph_link(question)
        if link is not None and snap.lexicon is not None:  # the entities the question names
            decision = named_only(decision, walk, snap.lexicon, question, link)
        if mode:
            return forced(mode, decision)
        if link is not None:  # the entities a local search's graph walk starts from
            decision = with_graph_seeds(decision, snap.index, question, link)
        if (self.mode == "llm" and snap.has_reports
                and decision.confidence < self.settings.retrieval.route_confidence_threshold):
            from routing.llm import llm_route

            if self._client is None:
                self._client = open_llm(self.settings)
            if self._client is not None:
                decision = llm_route(question, decision, self._client, self.settings.llm.prompts_dir)
        return decision

    def ask(self, question: str, mode: Route | None = None, metadata_filter: dict[str, Any] | None = None,
            on_delta: Callable[[str], None] | None = None) -> Answer:
        """The answer to ``question``. With ``on_delta``, an LLM-written answer's text is also passed to it piece
        by piece as it is written (other answers are not: they are complete at once).

        With ``metadata_filter`` the answer is local: the community reports summarize the whole corpus, so a
        question routed to them raises :class:`FilterNotApplicable` (routed once, here, so an LLM router
        cannot decide twice), and an unsure route is not answered from both sides."""
        if not question.strip():
            raise ValueError("the question is empty")
        snap = self.acquire()
        try:
            return replace(self._ask(snap, question, mode, metadata_filter, on_delta), index_generation=snap.number)
        finally:
            self.release(snap)

    def _ask(self, snap: QuerySnapshot, question: str, mode: Route | None,
             metadata_filter: dict[str, Any] | None, on_delta: Callable[[str], None] | None = None) -> Answer:
        s = self.settings.retrieval
        decision = self.route(question, mode, snap)
        if metadata_filter and decision.route == "global":
            raise FilterNotApplicable()
        router = self._routers.get(snap.number)
        qv = router.query_vector(question) if router is not None else None
        unsure = not decision.overridden and snap.has_reports and decision.confidence < s.route_confidence_threshold
        if unsure and metadata_filter:
            decision = replace(decision, reasons=decision.reasons + (
                f"confidence {decision.confidence:.2f} is below the threshold, but the metadata filter keeps the "
                "answer to the passages it allows (the community reports summarize the whole corpus)",))
        elif unsure:
            return both_sides_answer(question, decision, snap.index, snap.reports, top_k=s.top_k,
                                     n_sentences=s.answer_sentences, level=s.global_level,
                                     max_reports=s.global_reports, max_points=s.answer_sentences + 2,
                                     metadata_filter=metadata_filter, query_vector=qv, lexicon=snap.lexicon,
                                     kind_weights=self.settings.communities.kind_weights)
        if decision.route == "global" and self.mode == "llm":
            from answers.llm_global import llm_global_answer

            if self._client is None:
                self._client = open_llm(self.settings)
            return llm_global_answer(question, decision, snap.reports, snap.index, self._client,  # type: ignore[arg-type]
                                     s.global_level, s.global_reports, prompts_dir=self.settings.llm.prompts_dir,
                                     on_delta=on_delta)
        if decision.route == "global":
            reports: Sequence[Report] = snap.reports
            # the largest communities, each page counted by its kind (strata.topics)
            if about_the_whole(decision, snap.reports):
                kinds = {row.chunk_id: row.fields.get("kind") for row in snap.index.rows}
                reports = whole_corpus_reports(pick_level(snap.reports, s.global_level), kinds,
                                               self.settings.communities.kind_weights, s.global_reports)
            return global_answer(question, decision, reports, snap.index, s.global_level, s.global_reports,
                                 max_points=s.answer_sentences + 2, query_vector=qv,
                                 kind_weights=self.settings.communities.kind_weights)
        if self.mode == "llm":  # written by the LLM from the ranked passages, its citations checked
            from answers.llm_local import llm_local_answer

            if self._client is None:
                self._client = open_llm(self.settings)
            return llm_local_answer(question, decision, snap.index, self._client, s.top_k,  # type: ignore[arg-type]
                                    s.answer_sentences, metadata_filter, lexicon=snap.lexicon,
                                    prompts_dir=self.settings.llm.prompts_dir, on_delta=on_delta)
        return local_answer(question, decision, snap.index, s.top_k, s.answer_sentences, metadata_filter,
                            lexicon=snap.lexicon)

    def query(self, request: MemoryQueryRequest) -> MemoryQueryResponse:
        outcome, generation = self.search(request)
        results = [MemoryResult(chunk_id=h.chunk_id, rrf_score=h.rrf_score, text=h.text, source=h.source)
                   for h in outcome.hits]
        return MemoryQueryResponse(query_id=request.query_id, total_retrieved=len(results), results=results,
                                   index_generation=generation, warnings=outcome.warnings)

    def search(self, request: MemoryQueryRequest) -> tuple[SearchOutcome, int]:
        """The search behind :meth:`query`, with each hit's ranking score and ranks (the console shows them),
        and the generation that answered."""
        snap = self.acquire()
        try:
            hp = request.hybrid_params
            if hp is None:
                outcome = snap.index.search_detailed(request.search_text, request.top_k,
                                                     metadata_filter=request.metadata_filter)
            else:
                outcome = snap.index.search_detailed(request.search_text, request.top_k, hp.dense_weight,
                                                     hp.sparse_weight, hp.rrf_k_constant, request.metadata_filter,
                                                     fusion="rrf", graph_weight=hp.graph_weight)
        finally:
            self.release(snap)
        return outcome, snap.number

    def status(self) -> dict[str, Any]:
        """What is serving: the generation, its manifest's figures, and the last reload."""
        snap = self._current
        m = snap.manifest
        return {"index_generation": snap.number, "generation_created_at": m.get("created_at"),
                "chunks": m.get("chunks"), "entities": m.get("entities"), "communities": m.get("communities"),
                "reports": m.get("reports"), "retrieval": m.get("retrieval"), "reload_error": self.reload_error}

    def close(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        with self._lock:
            snaps = [self._current, *self._retired]
            self._retired = []
        for snap in snaps:
            snap.close()
        self._lease.release()
        if self._client is not None:
            self._client.close()
