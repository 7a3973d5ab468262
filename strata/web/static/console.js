// Strata console: plain DOM code, no framework and no network beyond this server's own API.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY_STORE = "strata.apiKey";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  fill(node, children);
  return node;
}

// Append children (nested arrays flattened; null, undefined and false skipped); replaceChildren without the nulls.
function fill(node, children) {
  for (const c of [children].flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

function setChildren(node, ...children) {
  node.replaceChildren();
  fill(node, children);
}

// ---- Markdown rendered by the server -----------------------------------------------------------------------
// The server renders with raw HTML turned off; this allowlist is a second guard, so that nothing but the
// elements Markdown produces (and none of their event handlers or script links) ever reaches the page.
const MD_TAGS = new Set(["P", "H1", "H2", "H3", "H4", "H5", "H6", "UL", "OL", "LI", "PRE", "CODE", "EM", "STRONG", "S", "DEL",
  "BLOCKQUOTE", "A", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD", "HR", "BR", "SPAN", "MARK"]);
const MD_ATTRS = { A: ["href", "title", "target", "rel"], OL: ["start"], CODE: ["class"], SPAN: ["class", "title"], TH: ["style"], TD: ["style"] };

function markdownNode(html, extraClass) {
  const template = document.createElement("template");
  template.innerHTML = html;
  const walk = (parent) => {
    for (const node of [...parent.childNodes]) {
      if (node.nodeType === Node.TEXT_NODE) continue;
      if (node.nodeType !== Node.ELEMENT_NODE || !MD_TAGS.has(node.tagName)) {
        node.replaceWith(document.createTextNode(node.nodeType === Node.ELEMENT_NODE ? node.textContent : ""));
        continue;
      }
      const allowed = MD_ATTRS[node.tagName] || [];
      for (const attr of [...node.attributes]) {
        const keep = allowed.includes(attr.name)
          && !(attr.name === "href" && !/^(https?:|mailto:|#|\/|\.|[^:]*$)/i.test(attr.value.trim()))
          && !(attr.name === "style" && !/^text-align:\s*(left|right|center);?$/.test(attr.value));
        if (!keep) node.removeAttribute(attr.name);
      }
      walk(node);
    }
  };
  walk(template.content);
  const box = el("div", { class: "md" + (extraClass ? " " + extraClass : "") });
  box.append(template.content);
  return box;
}

// Replace matches of `pattern` in the text of `root` (not inside code, pre or links) by what `make` returns for
// the match (null: leave it as text).
function linkText(root, pattern, make) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement.closest("code, pre, a") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const text = node.nodeValue;
    const out = [];
    let last = 0, m;
    pattern.lastIndex = 0;
    while ((m = pattern.exec(text)) !== null) {
      const made = make(m);
      if (!made) continue;
      out.push(text.slice(last, m.index), ...made);
      last = m.index + m[0].length;
    }
    if (!out.length) continue;
    out.push(text.slice(last));
    const frag = document.createDocumentFragment();
    fill(frag, out);
    node.replaceWith(frag);
  }
}

// ---- API --------------------------------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function describeDetail(detail) {
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    return detail.map((d) => {
      const loc = (d.loc || []).filter((p) => p !== "body").join(".");
      return (loc ? loc + ": " : "") + (d.msg || JSON.stringify(d));
    }).join("; ");
  }
  return JSON.stringify(detail);
}

async function api(method, path, body) {
  const headers = { Accept: "application/json, text/html" };
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers.Authorization = "Bearer " + key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new ApiError(0, "the server cannot be reached (" + err.message + ")");
  }
  const type = response.headers.get("content-type") || "";
  const payload = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) {
    let message = payload && payload.detail !== undefined ? describeDetail(payload.detail) : String(payload || response.statusText);
    if (response.status === 401 || response.status === 403) {
      message = (key ? "the server refused this API key" : "this server needs an API key: enter it at the top") + " (" + message + ")";
    }
    throw new ApiError(response.status, message);
  }
  return payload;
}

function showError(box, err) {
  box.textContent = (err.status ? "HTTP " + err.status + ": " : "") + err.message;
  box.hidden = false;
}

function parseJsonField(input, what) {
  const text = input.value.trim();
  if (!text) return null;
  try {
    const value = JSON.parse(text);
    if (typeof value !== "object" || Array.isArray(value) || value === null) throw new Error("not a JSON object");
    return value;
  } catch (err) {
    throw new ApiError(0, what + " is not a JSON object: " + err.message);
  }
}

// ---- API key ----------------------------------------------------------------------------------------------
function refreshKeyState() {
  const key = sessionStorage.getItem(KEY_STORE);
  $("key-state").textContent = key ? "key set for this tab" : "no key";
}

$("key-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const key = $("api-key").value.trim();
  if (key) sessionStorage.setItem(KEY_STORE, key); else sessionStorage.removeItem(KEY_STORE);
  $("api-key").value = "";
  refreshKeyState();
  route();
});

// ---- links to chunks, documents and communities -----------------------------------------------------------
// A link that opens the chunk in the drawer, with `ranges` ({start, end}: the sentences quoted from it) marked.
function chunkLink(chunkId, ranges) {
  const marks = (ranges || []).filter((r) => r && r.start >= 0 && r.end > r.start);
  return el("a", { href: "#", class: "chunk-link", "data-chunk": chunkId, "data-marks": marks.map((r) => r.start + "-" + r.end).join(",") || null,
    onclick: (ev) => { ev.preventDefault(); openChunk(chunkId, marks); } }, chunkId);
}

const titles = new Map();  // community id -> summary, from every list or detail the console has loaded
function remember(...summaries) { for (const c of summaries.flat()) if (c) titles.set(c.id, c); }
function communityTitle(id) { const c = titles.get(id); return c ? c.title : id; }

// A link to the community: its level and title (or `text`, without the level).
function communityLink(id, text) {
  const c = text ? null : titles.get(id);
  return el("a", { href: "#communities/" + encodeURIComponent(id), class: "community-link" },
    c ? el("span", { class: "lvl" }, "L" + c.level) : null, c ? " " : null, text || communityTitle(id));
}

function openDrawer(title, ...content) {
  $("drawer-title").textContent = title;
  const body = $("drawer-body");
  setChildren(body, ...content);
  $("drawer").hidden = false;
  body.scrollTop = 0;
}

$("drawer-close").addEventListener("click", () => { $("drawer").hidden = true; });
document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") $("drawer").hidden = true; });

async function openChunk(chunkId, marks) {
  openDrawer(chunkId, el("p", { class: "muted" }, "loading…"));
  try {
    const query = (marks || []).map((r) => "mark=" + r.start + "-" + r.end).join("&");
    const c = await api("GET", "/v1/chunks/" + encodeURIComponent(chunkId) + (query ? "?" + query : ""));
    const meta = Object.entries(c.metadata || {});
    const text = markdownNode(c.html, "chunk-text");
    text.id = "chunk-text";
    const quoted = text.querySelectorAll("mark").length;
    openDrawer("Chunk " + c.chunk_id,
      el("p", {}, el("span", { class: "label" }, "Document "),
        el("a", { href: "#", id: "open-document", onclick: (ev) => { ev.preventDefault(); openDocument(c.document_id, c.chunk_id); } }, c.source)),
      meta.length ? el("table", { class: "meta" }, meta.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, typeof v === "object" ? JSON.stringify(v) : String(v))))) : null,
      quoted ? el("p", { class: "muted small", id: "quoted-note" }, el("mark", {}, "marked"), ": the sentence" + (marks.length === 1 ? "" : "s") + " the answer quoted") : null,
      text);
    const first = text.querySelector("mark");
    if (first) first.scrollIntoView({ block: "center" });
  } catch (err) {
    openDrawer(chunkId, el("div", { class: "error" }, err.message));
  }
}

async function openDocument(documentId, focusChunk) {
  try {
    const d = await api("GET", "/v1/documents/" + encodeURIComponent(documentId));
    const parts = d.chunks.map((c) => el("div", { class: "doc-chunk" + (c.chunk_id === focusChunk ? " focus" : ""), id: "doc-" + c.chunk_id },
      el("div", { class: "muted small" }, c.chunk_id), markdownNode(c.html, "chunk-text")));
    openDrawer("Document " + d.source,
      el("p", { id: "document-kind" }, el("span", { class: "label" }, "Kind "), el("span", { class: "chip" }, d.kind || "not recorded")),
      el("p", { class: "muted" }, d.chunks.length + " chunk(s), in index order; neighbouring chunks may share a paragraph."), ...parts);
    const focus = document.getElementById("doc-" + focusChunk);
    if (focus) focus.scrollIntoView({ block: "start" });
  } catch (err) {
    openDrawer(documentId, el("div", { class: "error" }, err.message));
  }
}

// ---- ask ---------------------------------------------------------------------------------------------------
async function renderAnswer(a) {
  // The answer's Markdown rendered by the server; then its citations, [chunk-id, chunk-id] and (report c0_...),
  // become links. The points are in answer order: the n-th citation of a point's chunk opens that chunk with the
  // point's sentence marked.
  let box;
  try {
    box = markdownNode((await api("POST", "/v1/console/render", { text: a.answer, answer: true })).html, "answer");
  } catch (err) {
    box = el("div", { class: "answer plain" }, a.answer);
  }
  const known = new Set(a.citations.map((c) => c.chunk_id));
  const points = (a.points || []).filter((p) => p.chunk_id);
  let next = 0;
  linkText(box, /\[([^\[\]]+)\]|\(report ([^()\s]+)\)/g, (m) => {
    if (m[1] !== undefined) {
      const ids = m[1].split(/,\s*/);
      if (!ids.every((id) => known.has(id))) return null;
      let range = null;
      const i = points.findIndex((p, j) => j >= next && ids.includes(p.chunk_id));
      if (i >= 0) { range = points[i]; next = i + 1; }
      const out = ["["];
      ids.forEach((id, k) => { if (k) out.push(", "); out.push(chunkLink(id, range && range.chunk_id === id ? [range] : [])); });
      out.push("]");
      return out;
    }
    return ["(report ", communityLink(m[2], m[2]), ")"];
  });
  return box;
}

$("ask-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const box = $("ask-error");
  box.hidden = true;
  const button = ev.submitter || $("ask-form").querySelector("button");
  try {
    const body = { question: $("ask-question").value };
    if ($("ask-mode").value) body.mode = $("ask-mode").value;
    const filter = parseJsonField($("ask-filter"), "the metadata filter");
    if (filter) body.metadata_filter = filter;
    button.disabled = true;
    const a = await api("POST", "/v1/ask", body);
    const r = a.route;
    $("route-name").textContent = r.route;
    $("route-name").className = "badge " + r.route;
    $("route-forced").textContent = r.overridden ? "(chosen by you)" : "";
    const total = r.local_score + r.global_score;
    const share = total > 0 ? Math.max(r.local_score, r.global_score) / total : 0.5;
    $("route-confidence").textContent = Math.round(share * 100) + "%";
    $("route-local-bar").style.width = (total > 0 ? (100 * r.local_score / total) : 50) + "%";
    $("route-global-bar").style.width = (total > 0 ? (100 * r.global_score / total) : 50) + "%";
    $("route-scores").textContent = "local score " + r.local_score.toFixed(2) + " · global score " + r.global_score.toFixed(2);
    setChildren($("route-reasons"), ...r.reasons.map((x) => el("li", {}, x)));
    setChildren($("route-terms"), 
      ...r.entities.map((x) => el("span", { class: "chip entity", title: "known entity" }, x)),
      ...r.identifiers.filter((x) => !r.entities.includes(x)).map((x) => el("span", { class: "chip ident", title: "identifier" }, x)));
    $("answer-mode").textContent = "(" + a.mode + ")";
    if (a.reports.length) {
      const used = await api("GET", "/v1/communities?limit=500&ids=" + encodeURIComponent(a.reports.join(","))).catch(() => null);
      if (used) remember(used.communities);
    }
    setChildren($("answer-text"), await renderAnswer(a));
    const quoted = (id) => (a.points || []).filter((p) => p.chunk_id === id);
    setChildren($("answer-citations"), ...a.citations.map((c) => el("li", {}, chunkLink(c.chunk_id, quoted(c.chunk_id)), el("span", { class: "muted" }, " — " + c.source))));
    $("answer-reports-wrap").hidden = !a.reports.length;
    setChildren($("answer-reports"), ...a.reports.map((id) => el("li", {}, communityLink(id), el("span", { class: "muted small" }, " " + id))));
    $("ask-result").hidden = false;
  } catch (err) {
    showError(box, err);
  } finally {
    button.disabled = false;
  }
});

// ---- memory query ------------------------------------------------------------------------------------------
$("q-custom").addEventListener("change", () => {
  for (const id of ["q-dense", "q-sparse", "q-k"]) $(id).disabled = !$("q-custom").checked;
});

// The heading always describes the results under it; once any field changes, it says the form has moved on.
let queryCount = 0;
function markQueryStale() {
  if (!$("query-result").hidden) $("q-stale").hidden = false;
}
for (const id of ["q-text", "q-topk", "q-id", "q-custom", "q-dense", "q-sparse", "q-k", "q-filter"]) {
  $(id).addEventListener("input", markQueryStale);
  $(id).addEventListener("change", markQueryStale);
}

const fmtScore = (x) => (x === null || x === undefined ? "" : x.toFixed(6));
$("query-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const box = $("query-error");
  box.hidden = true;
  try {
    queryCount += 1;
    const request = { query_id: $("q-id").value.trim() || "console-" + queryCount, search_text: $("q-text").value, top_k: Number($("q-topk").value) };
    if ($("q-custom").checked) {
      request.hybrid_params = { dense_weight: Number($("q-dense").value), sparse_weight: Number($("q-sparse").value), rrf_k_constant: Number($("q-k").value) };
      if ($("q-graph").value.trim() !== "") request.hybrid_params.graph_weight = Number($("q-graph").value);
    }
    const filter = parseJsonField($("q-filter"), "metadata_filter");
    if (filter) request.metadata_filter = filter;
    const res = await api("POST", "/v1/console/query", request);
    $("q-request").textContent = JSON.stringify(request, null, 2);
    const n = res.total_retrieved;
    $("q-total").textContent = n + (n === 1 ? " result" : " results");
    setChildren($("q-echo"), "for “", el("span", { id: "q-echo-text" }, res.search_text), "” · query_id ", el("code", { id: "q-echo-id" }, res.query_id),
      " · top_k " + request.top_k + " · ranked by ", el("b", { id: "q-ranking" }, res.ranking),
      " · rrf_score weights: ", el("span", { id: "q-rrf-weights" }, "BM25 " + res.sparse_weight.toFixed(2) + ", dense " + res.dense_weight.toFixed(2) + (res.graph_weight ? ", graph walk " + res.graph_weight.toFixed(2) : "")));
    $("q-score-head").title = "the score the results are ordered by: " + res.ranking;
    $("q-stale").hidden = true;
    setChildren($("q-warnings"), res.warnings.map((w) => el("li", {}, w)));
    setChildren($("q-rows"), ...res.results.map((r, i) => el("tr", {},
      el("td", {}, i + 1), el("td", {}, chunkLink(r.chunk_id)),
      el("td", { class: "num score" }, fmtScore(r.score)), el("td", { class: "num rrf" }, fmtScore(r.rrf_score)),
      el("td", { class: "small ranks" }, "BM25 " + (r.sparse_rank || "–") + " · dense " + (r.dense_rank || "–") + (r.graph_rank ? " · graph " + r.graph_rank : "")),
      el("td", {}, r.source), el("td", { class: "snippet", title: r.text.length > 2000 ? r.text.slice(0, 2000) + "…" : r.text }, r.preview))));
    $("query-result").hidden = false;
  } catch (err) {
    $("query-result").hidden = true;  // no results under a heading that no longer describes them
    showError(box, err);
  }
});

// ---- communities -------------------------------------------------------------------------------------------
const STALE_HINT = "a document this report was written from changed or was deleted since: the Drift page says by how much";
const COMM_PAGE = 50, MEMBERS_PAGE = 25;
const list = { q: "", level: "", offset: 0, data: null, selected: null };

function pager(box, offset, limit, total, go, what) {
  const last = Math.min(total, offset + limit);
  setChildren(box,
    el("button", { type: "button", class: "prev", disabled: offset <= 0, onclick: () => go(Math.max(0, offset - limit)) }, "‹ prev"),
    el("span", { class: "muted small range" }, total ? (offset + 1) + "–" + last + " of " + total + " " + what : "no " + what),
    el("button", { type: "button", class: "next", disabled: last >= total, onclick: () => go(offset + limit) }, "next ›"));
  box.hidden = total <= limit && offset === 0;
}

function titleNote(c) {
  // Communities at different levels often share a title (a sub-community led by the same entities): say so.
  if (!c.same_title || !c.same_title.length) return null;
  const n = c.same_title.length;
  const text = c.same_title.includes(c.parent_id) ? "same title as its parent"
    : n === 1 && (c.children || []).includes(c.same_title[0]) ? "same title as its sub-community"
    : "same title as " + n + " other" + (n === 1 ? "" : "s");
  return el("span", { class: "muted small same-title", title: c.same_title.join(", ") }, " · " + text);
}

async function loadTree() {
  const params = new URLSearchParams({ offset: list.offset, limit: COMM_PAGE });
  if (list.q) params.set("q", list.q);
  if (list.level !== "") params.set("level", list.level);
  const data = await api("GET", "/v1/communities?" + params);
  list.data = data;
  remember(data.communities);
  const levels = $("comm-level");
  if (levels.options.length !== data.levels + 1) {
    setChildren(levels, el("option", { value: "" }, "all levels"),
      [...Array(data.levels).keys()].map((l) => el("option", { value: l }, "level " + l + (l === 0 ? " (coarsest)" : ""))));
    levels.value = list.level;
  }
  $("comm-count").textContent = (list.q || list.level !== ""
    ? data.matched + " of " + data.total + " communities match" + (list.q ? " “" + list.q + "”" : "") + (list.level !== "" ? " at level " + list.level : "")
    : data.total + " communities on " + data.levels + " level(s); level 0 is the coarsest.");
  const item = (c) => el("li", {}, el("a", { href: "#communities/" + encodeURIComponent(c.id), "data-community": c.id, class: "tree-item" + (c.id === list.selected ? " active" : "") },
    el("span", { class: "lvl" }, "L" + c.level), " ", el("span", { class: "title" }, c.title), " ", el("span", { class: "muted small" }, c.size + " members"),
    titleNote(c),
    c.matched_members.length ? el("span", { class: "small matched" }, " · member: " + c.matched_members.join(", ")) : null,
    c.stale ? el("span", { class: "chip stale", title: STALE_HINT }, "needs refresh") : null));
  setChildren($("comm-tree"), data.communities.length ? el("ul", {}, data.communities.map(item)) : el("p", { class: "muted" }, "No community matches."));
  pager($("comm-pager"), data.offset, data.limit, data.matched, (offset) => { list.offset = offset; loadTree().catch((err) => showError($("comm-error"), err)); }, "communities");
}

let searchTimer = null;
$("comm-search-form").addEventListener("submit", (ev) => ev.preventDefault());
$("comm-search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => { list.q = $("comm-search").value.trim(); list.offset = 0; loadTree().catch((err) => showError($("comm-error"), err)); }, 200);
});
$("comm-level").addEventListener("change", () => { list.level = $("comm-level").value; list.offset = 0; loadTree().catch((err) => showError($("comm-error"), err)); });

const TYPE_COLORS = ["#2f6fb3", "#c0392b", "#27ae60", "#8e44ad", "#e67e22", "#16a085", "#e84393", "#d35400", "#2c3e50", "#b7950b"];
function typeColor(type) {
  // The same type gets the same colour in every graph: a small stable hash of its name.
  let h = 0;
  for (const ch of type) h = (h * 31 + ch.codePointAt(0)) >>> 0;
  return TYPE_COLORS[h % TYPE_COLORS.length];
}

function layout(graph, width, height) {
  // Fruchterman-Reingold from a circle: deterministic, and quick for the few dozen nodes drawn here.
  const n = graph.nodes.length;
  const pos = graph.nodes.map((_, i) => ({ x: width / 2 + (width / 3) * Math.cos(2 * Math.PI * i / Math.max(n, 1)), y: height / 2 + (height / 3) * Math.sin(2 * Math.PI * i / Math.max(n, 1)) }));
  if (n <= 1) { if (n) { pos[0].x = width / 3; pos[0].y = height / 2; } return pos; }
  const index = new Map(graph.nodes.map((v, i) => [v.id, i]));
  const edges = graph.edges.map((e) => [index.get(e.source), index.get(e.target)]).filter(([a, b]) => a !== undefined && b !== undefined);
  const labelWidth = graph.nodes.map((v) => 7 * Math.min(v.name.length, 28) + 12);  // the label sits right of its node
  const k = Math.sqrt((width * height) / n) * 0.9;
  let t = width / 8;
  for (let it = 0; it < 250; it++) {
    const d = pos.map(() => ({ x: 0, y: 0 }));
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) {
      let dx = pos[i].x - pos[j].x, dy = pos[i].y - pos[j].y;
      const dist = Math.max(0.01, Math.hypot(dx, dy));
      const f = (k * k) / dist;
      dx /= dist; dy /= dist;
      d[i].x += dx * f; d[i].y += dy * f; d[j].x -= dx * f; d[j].y -= dy * f;
    }
    for (const [a, b] of edges) {
      let dx = pos[a].x - pos[b].x, dy = pos[a].y - pos[b].y;
      const dist = Math.max(0.01, Math.hypot(dx, dy));
      const f = (dist * dist) / k;
      dx /= dist; dy /= dist;
      d[a].x -= dx * f; d[a].y -= dy * f; d[b].x += dx * f; d[b].y += dy * f;
    }
    for (let i = 0; i < n; i++) {
      // a weak pull to the centre keeps disconnected members on the canvas
      d[i].x += (width / 2 - pos[i].x) * 0.02 * k / 10; d[i].y += (height / 2 - pos[i].y) * 0.02 * k / 10;
      const len = Math.max(0.01, Math.hypot(d[i].x, d[i].y));
      pos[i].x += (d[i].x / len) * Math.min(len, t);
      pos[i].y += (d[i].y / len) * Math.min(len, t);
      pos[i].x = Math.min(width - 14 - labelWidth[i], Math.max(14, pos[i].x));
      pos[i].y = Math.min(height - 24, Math.max(24, pos[i].y));
    }
    t *= 0.98;
  }
  separateLabels(pos, labelWidth, width, height);
  return pos;
}

// Labels sit right of their nodes, 14px high: push apart (mostly up and down) any two whose boxes overlap, so that
// no label is drawn over another.
function separateLabels(pos, labelWidth, width, height) {
  const H = 16, n = pos.length;
  for (let round = 0; round < 300; round++) {
    let moved = false;
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) {
      const a = pos[i], b = pos[j];
      const overlapX = Math.min(a.x + labelWidth[i], b.x + labelWidth[j]) - Math.max(a.x - 8, b.x - 8);
      const overlapY = H - Math.abs(a.y - b.y);
      if (overlapX <= 0 || overlapY <= 0) continue;
      moved = true;
      const up = a.y < b.y || (a.y === b.y && i < j) ? -1 : 1;
      const push = overlapY / 2 + 0.5;
      a.y += up * push; b.y -= up * push;
      if (round > 150) { const side = a.x < b.x ? -1 : 1; a.x += side * 2; b.x -= side * 2; }
      for (const [p, w] of [[a, labelWidth[i]], [b, labelWidth[j]]]) {
        p.y = Math.min(height - 12, Math.max(12, p.y));
        p.x = Math.min(width - 4 - w, Math.max(10, p.x));
      }
    }
    if (!moved) break;
  }
}

function drawGraph(graph, onPick, width = 640, height = graph.nodes.length > 24 ? 500 : 380) {
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  svg.setAttribute("class", "graph");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", graph.nodes.length + " entities and " + graph.edges.length + " relations");
  const mk = (tag, attrs, text) => {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const pos = layout(graph, width, height);
  const index = new Map(graph.nodes.map((v, i) => [v.id, i]));
  const types = [...new Set(graph.nodes.map((v) => v.type))].sort();
  const maxW = Math.max(1, ...graph.edges.map((e) => e.weight));
  for (const e of graph.edges) {
    const a = pos[index.get(e.source)], b = pos[index.get(e.target)];
    if (!a || !b) continue;
    const line = mk("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: "edge", "stroke-width": 1 + 2.5 * (e.weight / maxW) });
    line.append(mk("title", {}, e.description + " (" + e.weight + " chunk" + (e.weight === 1 ? "" : "s") + ")"));
    svg.append(line);
  }
  graph.nodes.forEach((v, i) => {
    const g = mk("g", { class: "node" + (v.focus ? " focus" : ""), transform: "translate(" + pos[i].x.toFixed(1) + "," + pos[i].y.toFixed(1) + ")", "data-entity": v.id, tabindex: "0" });
    g.append(mk("circle", { r: v.focus ? 9 : 6.5, fill: typeColor(v.type) }));
    g.append(mk("text", { x: 10, y: 4 }, v.name.length > 28 ? v.name.slice(0, 27) + "…" : v.name));
    g.append(mk("title", {}, v.name + " (" + v.type + ")"));
    if (onPick) {
      g.addEventListener("click", () => onPick(v.id));
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter") onPick(v.id); });
    }
    svg.append(g);
  });
  const legend = el("div", { class: "legend" }, types.map((t) => el("span", {}, el("i", { style: "background:" + typeColor(t) }), t)));
  return el("div", { class: "graph-wrap" }, svg, legend);
}

async function showNeighbourhood(entityId) {
  const box = $("neighbourhood");
  if (!box) return;
  try {
    const n = await api("GET", "/v1/entities/" + encodeURIComponent(entityId) + "/neighbourhood");
    const unknown = n.communities.filter((id) => !titles.has(id));
    if (unknown.length) remember((await api("GET", "/v1/communities?limit=500&ids=" + encodeURIComponent(unknown.join(",")))).communities);
    setChildren(box, 
      el("h3", {}, "Neighbourhood of " + n.entity.name, el("span", { class: "muted small" }, " " + n.entity.type + " · " + n.entity.chunks + " chunk(s)")),
      el("p", {}, n.entity.description),
      el("p", { class: "small" }, "In communities: ", n.communities.map((id, i) => [i ? ", " : "", communityLink(id)])),
      drawGraph(n.graph, showNeighbourhood, 640, 320),
      n.graph.truncated ? el("p", { class: "muted small" }, n.graph.truncated + " more neighbours not drawn") : null);
    box.scrollIntoView({ block: "nearest" });
  } catch (err) {
    setChildren(box, el("div", { class: "error" }, err.message));
  }
}

function membersTable(members) {
  return el("table", { class: "members", id: "members" },
    el("colgroup", {}, el("col", { class: "c-name" }), el("col", { class: "c-type" }), el("col", { class: "c-chunks" }), el("col", {})),
    el("thead", {}, el("tr", {}, el("th", {}, "entity"), el("th", {}, "type"), el("th", {}, "chunks"), el("th", {}, "description"))),
    el("tbody", {}, members.map((m) => el("tr", {},
      el("td", {}, el("a", { href: "#", class: "clamp2", title: m.name, onclick: (ev) => { ev.preventDefault(); showNeighbourhood(m.id); } }, m.name)),
      el("td", {}, m.type), el("td", { class: "num" }, m.chunks),
      el("td", { class: "small" }, el("div", { class: "clamp3", title: m.description }, m.description))))));
}

async function showMembers(id, offset) {
  const d = await api("GET", "/v1/communities/" + encodeURIComponent(id) + "?members_offset=" + offset + "&members_limit=" + MEMBERS_PAGE);
  $("members").replaceWith(membersTable(d.members));
  pager($("members-pager"), d.members_offset, d.members_limit, d.members_total, (o) => showMembers(id, o).catch((err) => showError($("comm-error"), err)), "members");
}

async function showCommunity(id) {
  const detail = $("comm-detail");
  list.selected = id;
  for (const a of document.querySelectorAll(".tree-item")) a.classList.toggle("active", a.dataset.community === id);
  try {
    const d = await api("GET", "/v1/communities/" + encodeURIComponent(id) + "?members_limit=" + MEMBERS_PAGE);
    remember(d.community, d.parent, d.children);
    const c = d.community;
    const parent = d.parent ? communityLink(d.parent.id) : "none (top level)";
    const kids = d.children.slice(0, 12);
    const report = d.report ? el("div", { class: "card" },
      el("div", { class: "label" }, "Report", d.report.stale ? el("span", { class: "chip stale", title: STALE_HINT }, "needs refresh") : null,
        el("span", { class: "muted small", id: "report-meta" }, (d.report.mode === "llm" ? " rating " + d.report.rating.toFixed(1) + " (the LLM's importance rating, 0–10)" : " no rating (an extractive report quotes; it does not judge)") + " · " + d.report.mode + (d.report.model ? " " + d.report.model : "") + " · written " + d.report.created_at)),
      markdownNode(d.report.summary_html, "summary"),
      el("ul", { class: "findings" }, d.report.findings.map((f) => el("li", {}, markdownNode(f.html, "finding"), " ",
        f.chunk_ids.map((cid, i) => [i ? " " : "", el("span", { class: "small" }, "[", chunkLink(cid, i === 0 ? [{ start: f.start, end: f.end }] : []), "]")])))))
      : el("p", { class: "muted" }, "No report yet for this community.");
    const g = d.graph;
    setChildren(detail,
      el("h2", { id: "community-title" }, el("span", { class: "lvl" }, "L" + c.level), " ", c.title),
      el("p", { class: "small" }, el("span", { class: "lvl" }, "level " + c.level), " · ", c.id, " · ", c.size, " members · parent: ", parent,
        titleNote(c),
        kids.length ? [" · sub-communities: ", kids.map((k, i) => [i ? ", " : "", communityLink(k.id)]),
          d.children.length > kids.length ? " and " + (d.children.length - kids.length) + " more" : ""] : null),
      report,
      el("div", { class: "label" }, "Members and the relations among them ", el("span", { class: "muted small" }, "(click an entity for its neighbourhood)")),
      drawGraph(g, showNeighbourhood),
      el("p", { class: "muted small", id: "graph-note" }, g.truncated
        ? "The " + g.nodes.length + " best-connected of " + (g.nodes.length + g.truncated) + " members are drawn, and " + g.truncated + " more are not."
        : g.nodes.length + " members drawn."),
      el("div", { id: "neighbourhood" }),
      el("div", { class: "label" }, "Members ", el("span", { class: "muted small" }, "(most-mentioned first)")),
      membersTable(d.members),
      el("div", { id: "members-pager", class: "pager" }));
    pager($("members-pager"), d.members_offset, d.members_limit, d.members_total, (o) => showMembers(id, o).catch((err) => showError($("comm-error"), err)), "members");
  } catch (err) {
    setChildren(detail, el("div", { class: "error" }, err.message));
  }
}

// ---- drift -------------------------------------------------------------------------------------------------
async function loadDrift() {
  const box = $("drift-error");
  box.hidden = true;
  const frame = $("drift-frame");
  try {
    frame.srcdoc = await api("GET", "/v1/drift/page");
  } catch (err) {
    showError(box, err);
  }
}

$("drift-frame").addEventListener("load", () => {
  const doc = $("drift-frame").contentDocument;
  if (doc && doc.body) $("drift-frame").style.height = (doc.documentElement.scrollHeight + 20) + "px";
});

// "Open the page on its own": a plain link cannot send the API key, so with a key set the page is fetched with it
// and opened from memory (a blob: address) in the new tab.
$("drift-open").addEventListener("click", async (ev) => {
  if (!sessionStorage.getItem(KEY_STORE)) return;
  ev.preventDefault();
  const tab = window.open("", "_blank");  // opened within the click, so that no pop-up blocker stops it
  try {
    const html = await api("GET", "/v1/drift/page");
    if (!tab) return;
    tab.opener = null;
    tab.location.href = URL.createObjectURL(new Blob([html], { type: "text/html" }));
  } catch (err) {
    if (tab) tab.close();
    showError($("drift-error"), err);
  }
});

// ---- views -------------------------------------------------------------------------------------------------
async function route() {
  const hash = decodeURIComponent(location.hash.replace(/^#/, "")) || "ask";
  const [view, ...rest] = hash.split("/");
  const name = ["ask", "query", "communities", "drift"].includes(view) ? view : "ask";
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== "view-" + name;
  for (const a of document.querySelectorAll("nav a[data-view]")) a.classList.toggle("active", a.dataset.view === name);
  if (name === "communities") {
    const box = $("comm-error");
    box.hidden = true;
    try {
      if (!list.data) await loadTree();
      const id = rest.join("/") || (list.data.communities[0] && list.data.communities[0].id);
      if (id) await showCommunity(id);
    } catch (err) {
      list.data = null;
      showError(box, err);
    }
  } else if (name === "drift") {
    await loadDrift();
  }
}

window.addEventListener("hashchange", route);
refreshKeyState();
route();
