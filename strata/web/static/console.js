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
function chunkLink(chunkId, range) {
  return el("a", { href: "#", class: "chunk-link", "data-chunk": chunkId, onclick: (ev) => { ev.preventDefault(); openChunk(chunkId, range); } }, chunkId);
}

function communityLink(id, text) {
  return el("a", { href: "#communities/" + encodeURIComponent(id), class: "community-link" }, text || id);
}

function highlighted(text, range) {
  if (!range || range.start < 0 || range.end <= range.start || range.end > text.length) return [text];
  return [text.slice(0, range.start), el("mark", {}, text.slice(range.start, range.end)), text.slice(range.end)];
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

async function openChunk(chunkId, range) {
  openDrawer(chunkId, el("p", { class: "muted" }, "loading…"));
  try {
    const c = await api("GET", "/v1/chunks/" + encodeURIComponent(chunkId));
    const meta = Object.entries(c.metadata || {});
    openDrawer("Chunk " + c.chunk_id,
      el("p", {}, el("span", { class: "label" }, "Document "),
        el("a", { href: "#", id: "open-document", onclick: (ev) => { ev.preventDefault(); openDocument(c.document_id, c.chunk_id); } }, c.source)),
      meta.length ? el("table", { class: "meta" }, meta.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, typeof v === "object" ? JSON.stringify(v) : String(v))))) : null,
      el("pre", { class: "chunk-text", id: "chunk-text" }, highlighted(c.text, range)));
  } catch (err) {
    openDrawer(chunkId, el("div", { class: "error" }, err.message));
  }
}

async function openDocument(documentId, focusChunk) {
  try {
    const d = await api("GET", "/v1/documents/" + encodeURIComponent(documentId));
    const parts = d.chunks.map((c) => el("div", { class: "doc-chunk" + (c.chunk_id === focusChunk ? " focus" : ""), id: "doc-" + c.chunk_id },
      el("div", { class: "muted small" }, c.chunk_id), el("pre", { class: "chunk-text" }, c.text)));
    openDrawer("Document " + d.source, el("p", { class: "muted" }, d.chunks.length + " chunk(s), in index order; neighbouring chunks overlap."), ...parts);
    const focus = document.getElementById("doc-" + focusChunk);
    if (focus) focus.scrollIntoView({ block: "start" });
  } catch (err) {
    openDrawer(documentId, el("div", { class: "error" }, err.message));
  }
}

// ---- ask ---------------------------------------------------------------------------------------------------
function joinWrappedLines(text) {
  // Sentences quoted from the sources keep the sources' line breaks: join those, keep the breaks between points
  // (a point ends with its citation, a heading with ':' or its report reference; list items start with '- ').
  const out = [];
  for (const line of text.split("\n")) {
    const prev = out.length ? out[out.length - 1] : "";
    if (prev.trim() && line.trim() && !/[\]):]\s*$/.test(prev) && !/^\s*[-*•]\s/.test(line)) out[out.length - 1] = prev + " " + line.trim();
    else out.push(line);
  }
  return out.join("\n");
}

function renderAnswerText(raw, citations) {
  // Citations appear in the answer as [chunk-id, chunk-id] and reports as (report c0_...): make both links.
  const text = joinWrappedLines(raw);
  const known = new Set(citations.map((c) => c.chunk_id));
  const out = [];
  const pattern = /\[([^\[\]]+)\]|\(report ([^()\s]+)\)/g;
  let last = 0, m;
  while ((m = pattern.exec(text)) !== null) {
    if (m[1] !== undefined) {
      const ids = m[1].split(/,\s*/);
      if (!ids.every((id) => known.has(id))) continue;
      out.push(text.slice(last, m.index), "[");
      ids.forEach((id, i) => { if (i) out.push(", "); out.push(chunkLink(id)); });
      out.push("]");
    } else {
      out.push(text.slice(last, m.index), "(report ", communityLink(m[2]), ")");
    }
    last = m.index + m[0].length;
  }
  out.push(text.slice(last));
  return out;
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
    setChildren($("answer-text"), ...renderAnswerText(a.answer, a.citations));
    setChildren($("answer-citations"), ...a.citations.map((c) => el("li", {}, chunkLink(c.chunk_id), el("span", { class: "muted" }, " — " + c.source))));
    $("answer-reports-wrap").hidden = !a.reports.length;
    if (a.reports.length && !tree) await loadTree().catch(() => null);
    setChildren($("answer-reports"), ...a.reports.map((id) => el("li", {}, communityLink(id, communityTitle(id)), el("span", { class: "muted small" }, " " + id))));
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

let queryCount = 1;
$("query-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const box = $("query-error");
  box.hidden = true;
  try {
    const request = { query_id: $("q-id").value || "console-" + queryCount, search_text: $("q-text").value, top_k: Number($("q-topk").value) };
    if ($("q-custom").checked) {
      request.hybrid_params = { dense_weight: Number($("q-dense").value), sparse_weight: Number($("q-sparse").value), rrf_k_constant: Number($("q-k").value) };
    }
    const filter = parseJsonField($("q-filter"), "metadata_filter");
    if (filter) request.metadata_filter = filter;
    $("q-request").textContent = JSON.stringify(request, null, 2);
    const res = await api("POST", "/v1/memory/query", request);
    queryCount += 1;
    $("q-id").value = "console-" + queryCount;
    $("q-total").textContent = res.total_retrieved + " result(s)";
    $("q-echo").textContent = "for query " + res.query_id;
    setChildren($("q-rows"), ...res.results.map((r, i) => el("tr", {},
      el("td", {}, i + 1), el("td", {}, chunkLink(r.chunk_id)), el("td", { class: "num" }, r.rrf_score.toFixed(6)),
      el("td", {}, r.source), el("td", { class: "snippet" }, r.text.length > 260 ? r.text.slice(0, 260) + "…" : r.text))));
    $("query-result").hidden = false;
  } catch (err) {
    showError(box, err);
  }
});

// ---- communities -------------------------------------------------------------------------------------------
let tree = null;
const STALE_HINT = "a document this report was written from changed or was deleted since: the Drift page says by how much";

function communityTitle(id) {
  const c = tree && tree.byId.get(id);
  return c ? c.title : id;
}

async function loadTree() {
  const data = await api("GET", "/v1/communities");
  const byId = new Map(data.communities.map((c) => [c.id, c]));
  tree = { data, byId };
  const levels = new Set(data.communities.map((c) => c.level));
  $("comm-count").textContent = data.communities.length + " communities on " + levels.size + " level(s); level 0 is the coarsest.";
  const roots = data.communities.filter((c) => !c.parent_id || !byId.has(c.parent_id));
  const node = (c) => {
    const kids = c.children.map((id) => byId.get(id)).filter(Boolean);
    const label = el("a", { href: "#communities/" + encodeURIComponent(c.id), "data-community": c.id, class: "tree-item" },
      el("span", { class: "lvl" }, "L" + c.level), " ", c.title, " ", el("span", { class: "muted small" }, c.size + " members"),
      c.stale ? el("span", { class: "chip stale", title: STALE_HINT }, "needs refresh") : null);
    return el("li", {}, label, kids.length ? el("ul", {}, kids.map(node)) : null);
  };
  setChildren($("comm-tree"), el("ul", {}, roots.map(node)));
}

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
  const labelWidth = graph.nodes.map((v) => 7 * Math.min(v.name.length, 28));  // the label sits right of its node
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
  return pos;
}

function drawGraph(graph, onPick, width = 640, height = 380) {
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
    setChildren(box, 
      el("h3", {}, "Neighbourhood of " + n.entity.name, el("span", { class: "muted small" }, " " + n.entity.type + " · " + n.entity.chunks + " chunk(s)")),
      el("p", {}, n.entity.description),
      el("p", { class: "small" }, "In communities: ", n.communities.map((id, i) => [i ? ", " : "", communityLink(id, communityTitle(id))])),
      drawGraph(n.graph, showNeighbourhood, 640, 320),
      n.graph.truncated ? el("p", { class: "muted small" }, n.graph.truncated + " more neighbours not drawn") : null);
    box.scrollIntoView({ block: "nearest" });
  } catch (err) {
    setChildren(box, el("div", { class: "error" }, err.message));
  }
}

async function showCommunity(id) {
  const detail = $("comm-detail");
  for (const a of document.querySelectorAll(".tree-item")) a.classList.toggle("active", a.dataset.community === id);
  try {
    const d = await api("GET", "/v1/communities/" + encodeURIComponent(id));
    const c = d.community;
    const parent = c.parent_id ? communityLink(c.parent_id, communityTitle(c.parent_id)) : "none (top level)";
    const report = d.report ? el("div", { class: "card" },
      el("div", { class: "label" }, "Report", d.report.stale ? el("span", { class: "chip stale", title: STALE_HINT }, "needs refresh") : null,
        el("span", { class: "muted small" }, " rating " + d.report.rating.toFixed(1) + " · " + d.report.mode + (d.report.model ? " " + d.report.model : "") + " · written " + d.report.created_at)),
      el("p", { class: "summary" }, d.report.summary),
      el("ul", { class: "findings" }, d.report.findings.map((f) => el("li", {}, f.text, " ",
        f.chunk_ids.map((cid, i) => [i ? " " : "", el("span", { class: "small" }, "[", chunkLink(cid, i === 0 ? { start: f.start, end: f.end } : null), "]")])))))
      : el("p", { class: "muted" }, "No report yet for this community.");
    setChildren(detail, 
      el("h2", { id: "community-title" }, c.title),
      el("p", { class: "small" }, el("span", { class: "lvl" }, "level " + c.level), " · ", c.id, " · ", c.size, " members · parent: ", parent,
        c.children.length ? [" · sub-communities: ", c.children.map((k, i) => [i ? ", " : "", communityLink(k, communityTitle(k))])] : null),
      report,
      el("div", { class: "label" }, "Members and the relations among them ", el("span", { class: "muted small" }, "(click an entity for its neighbourhood)")),
      drawGraph(d.graph, showNeighbourhood),
      d.graph.truncated ? el("p", { class: "muted small" }, d.graph.truncated + " less-connected members not drawn") : null,
      el("div", { id: "neighbourhood" }),
      el("table", { class: "members" }, el("thead", {}, el("tr", {}, el("th", {}, "entity"), el("th", {}, "type"), el("th", {}, "chunks"), el("th", {}, "description"))),
        el("tbody", {}, d.members.map((m) => el("tr", {},
          el("td", {}, el("a", { href: "#", onclick: (ev) => { ev.preventDefault(); showNeighbourhood(m.id); } }, m.name)),
          el("td", {}, m.type), el("td", { class: "num" }, m.chunks), el("td", { class: "small" }, m.description))))));
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
      if (!tree) await loadTree();
      const id = rest.join("/") || (tree.data.communities[0] && tree.data.communities[0].id);
      if (id) await showCommunity(id);
    } catch (err) {
      tree = null;
      showError(box, err);
    }
  } else if (name === "drift") {
    await loadDrift();
  }
}

window.addEventListener("hashchange", route);
refreshKeyState();
route();
