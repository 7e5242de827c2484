// kubesim's page: the live cluster, the objects of every kind, and the flow of one Pod.
//
// Everything it shows comes from the UI server: /ui/events streams summaries of Nodes and Pods (a
// snapshot, then what changed); /k8s/... is the Kubernetes API itself (objects, Tables, actions), passed
// through unchanged; /ui/pods/NS/NAME is a Pod's 13 steps and its scheduling decision.
// No framework and no build step: plain modules the browser runs as shipped.

const HEATMAP_ABOVE = 200;          // nodes: beyond this the cluster view is a heat map
const ROW_HEIGHT = 26;              // px, of a row of the objects table (rows are virtualised)
const AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const SCALABLE = new Set(["ReplicationController", "Deployment", "ReplicaSet", "StatefulSet"]);

const state = {
  nodes: new Map(), pods: new Map(), connected: false, serverUp: false,
  selected: null, filters: { namespace: "", labels: "", owner: "" },
  dirty: new Set(), allDirty: true, frame: 0, kinds: [], table: null,
};
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

// --- the API, through the UI server ------------------------------------------------------------

async function api(method, path, { body, contentType, accept } = {}) {
  const headers = {};
  if (contentType) headers["Content-Type"] = contentType;
  if (accept) headers.Accept = accept;
  const response = await fetch("/k8s" + path, { method, headers, body });
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  return { status: response.status, ok: response.ok, json, text };
}

function statusMessage(result) {
  if (result.ok) return null;
  return (result.json && result.json.message) || result.text || `HTTP ${result.status}`;
}

// --- quantities --------------------------------------------------------------------------------

// Two amounts of cpu in one unit: cores when both are whole, else millicores ("1500m/4000m").
function cpuPair(used, total) {
  return used % 1000 === 0 && total % 1000 === 0 ? `${used / 1000}/${total / 1000}` : `${used}m/${total}m`;
}
function memText(bytes) {
  const units = [["Gi", 2 ** 30], ["Mi", 2 ** 20], ["Ki", 2 ** 10]];
  for (const [u, n] of units) if (bytes >= n) return `${Math.round((bytes / n) * 10) / 10}${u}`;
  return `${bytes}`;
}

// --- filters -------------------------------------------------------------------------------------

function labelsMatch(labels, selector) {
  for (const term of selector.split(",").map((t) => t.trim()).filter(Boolean)) {
    const neq = term.split("!=");
    if (neq.length === 2) { if (labels[neq[0].trim()] === neq[1].trim()) return false; continue; }
    const eq = term.split("=");
    if (eq.length === 2) { if (labels[eq[0].trim()] !== eq[1].trim()) return false; continue; }
    if (term.startsWith("!")) { if (term.slice(1) in labels) return false; continue; }
    if (!(term in labels)) return false;
  }
  return true;
}

function podVisible(pod) {
  const f = state.filters;
  return (!f.namespace || pod.namespace === f.namespace) && (!f.labels || labelsMatch(pod.labels, f.labels)) &&
    (!f.owner || pod.owner.toLowerCase().includes(f.owner.toLowerCase()));
}

// --- the live feed -------------------------------------------------------------------------------

function connect() {
  const source = new EventSource("/ui/events");
  source.addEventListener("open", () => { state.serverUp = true; showBanner(); });
  source.addEventListener("error", () => { state.serverUp = false; showBanner(); });
  source.addEventListener("status", (e) => {
    const s = JSON.parse(e.data);
    state.connected = s.connected;
    state.error = s.error;
    $("eps").textContent = `${s.eventsPerSecond} events/s`;
    showBanner();
  });
  source.addEventListener("snapshot", (e) => {
    const s = JSON.parse(e.data);
    state.nodes = new Map(Object.entries(s.nodes));
    state.pods = new Map(Object.entries(s.pods));
    state.allDirty = true;
    refreshNamespaces();
    schedule();
  });
  source.addEventListener("delta", (e) => {
    const d = JSON.parse(e.data);
    for (const [name, node] of Object.entries(d.nodes)) {
      if (node === null) state.nodes.delete(name); else state.nodes.set(name, node);
      state.dirty.add(name);
    }
    for (const [uid, pod] of Object.entries(d.pods)) {
      const before = state.pods.get(uid);
      if (before) state.dirty.add(before.node || "");
      if (pod === null) state.pods.delete(uid); else { state.pods.set(uid, pod); state.dirty.add(pod.node || ""); }
      if (state.selected && state.selected.uid === uid) refreshSelected();
    }
    refreshNamespaces();
    schedule();
  });
}

function showBanner() {
  const banner = $("banner");
  const pill = $("connection");
  let text = "";
  if (!state.serverUp) text = "The UI server cannot be reached; reconnecting…";
  else if (!state.connected) text = `${state.error || "The APIServer cannot be reached"}; reconnecting…`;
  banner.hidden = !text;
  banner.textContent = text;
  pill.textContent = text ? "disconnected" : "live";
  pill.className = "pill " + (text ? "down" : "ok");
}

function schedule() {
  if (!state.frame) state.frame = requestAnimationFrame(() => { state.frame = 0; render(); });
}

// --- the cluster view ----------------------------------------------------------------------------

const nodeCards = new Map();        // node name -> { el, chips: Map(uid -> element) }

function podsByNode() {
  const byNode = new Map();
  for (const pod of state.pods.values()) {
    if (!byNode.has(pod.node)) byNode.set(pod.node, []);
    byNode.get(pod.node).push(pod);
  }
  return byNode;
}

function allocation(node, pods) {
  let cpu = 0, memory = 0, count = 0;
  for (const p of pods) {
    if (p.phase === "Succeeded" || p.phase === "Failed") continue;
    cpu += p.cpu; memory += p.memory; count += 1;
  }
  return { cpu, memory, count };
}

function bar(label, used, total, text) {
  const share = total > 0 ? Math.min(1, used / total) : 0;
  return `<div class="bar"><span>${label}</span><span class="track" role="meter" aria-label="${label}" ` +
    `aria-valuemin="0" aria-valuemax="${total}" aria-valuenow="${used}"><span class="fill${share > 0.9 ? " hot" : ""}" ` +
    `style="width:${(share * 100).toFixed(1)}%"></span></span><span>${esc(text)}</span></div>`;
}

function render() {
  if (location.hash === "#objects") return;
  const byNode = podsByNode();
  renderQueue(byNode.get("") || []);
  const names = [...state.nodes.keys()].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  $("node-count").textContent = `(${names.length})`;
  const heat = names.length > HEATMAP_ABOVE;
  $("nodes").hidden = heat;
  $("heatmap-wrap").hidden = !heat;
  if (heat) { renderHeatmap(names, byNode); state.allDirty = false; state.dirty.clear(); return; }
  const container = $("nodes");
  for (const [name, card] of nodeCards) if (!state.nodes.has(name)) { card.el.remove(); nodeCards.delete(name); }
  names.forEach((name, i) => {
    let card = nodeCards.get(name);
    if (!card) {
      card = { el: document.createElement("article"), chips: new Map() };
      card.el.className = "node";
      card.el.dataset.node = name;
      nodeCards.set(name, card);
      state.dirty.add(name);
    }
    if (container.children[i] !== card.el) container.insertBefore(card.el, container.children[i] || null);
    if (state.allDirty || state.dirty.has(name)) renderNode(card, state.nodes.get(name), byNode.get(name) || []);
  });
  state.allDirty = false;
  state.dirty.clear();
}

function renderNode(card, node, pods) {
  const used = allocation(node, pods);
  const labels = Object.entries(node.labels).map(([k, v]) => `${k}=${v}`).join("\n");
  const taints = node.taints.map((t) => `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`);
  const selected = state.selected && state.selected.kind === "Node" && state.selected.name === node.name;
  card.el.classList.toggle("selected", !!selected);
  let head = card.el.querySelector("h3");
  if (!head) {
    card.el.innerHTML = `<h3 tabindex="0" role="button"></h3><div class="bars"></div><p class="taints"></p>` +
      `<div class="pods" aria-label="Pods"></div>`;
    head = card.el.querySelector("h3");
    head.addEventListener("click", () => select({ kind: "Node", name: node.name }));
    head.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); head.click(); } });
  }
  head.title = labels || "no labels";
  head.setAttribute("aria-label", `Node ${node.name}, ${node.ready}${node.unschedulable ? ", cordoned" : ""}`);
  head.innerHTML = `${esc(node.name)} <span class="badge ${node.ready}">${node.ready}</span>` +
    (node.unschedulable ? `<span class="badge cordoned">cordoned</span>` : "");
  card.el.querySelector(".bars").innerHTML =
    bar("cpu", used.cpu, node.cpu, cpuPair(used.cpu, node.cpu)) +
    bar("memory", used.memory, node.memory, `${memText(used.memory)}/${memText(node.memory)}`) +
    bar("pods", used.count, node.pods, `${used.count}/${node.pods}`);
  const taintLine = card.el.querySelector(".taints");
  taintLine.textContent = taints.length ? "taints: " + taints.join(", ") : "";
  taintLine.hidden = !taints.length;
  renderChips(card, pods.filter(podVisible), card.el.querySelector(".pods"));
}

function chipFor(pod) {
  const chip = document.createElement("button");
  chip.type = "button";
  chip.className = `chip ${pod.phase}`;
  chip.dataset.uid = pod.uid;
  chip.addEventListener("click", () => select({ kind: "Pod", namespace: pod.namespace, name: pod.name, uid: pod.uid }));
  return chip;
}

function labelChip(chip, pod) {
  chip.textContent = pod.name;
  chip.title = `${pod.namespace}/${pod.name}: ${pod.phase}${pod.owner ? " (" + pod.owner + ")" : ""}`;
  chip.setAttribute("aria-label", `Pod ${pod.namespace}/${pod.name}, ${pod.phase}`);
}

function renderChips(card, pods, box) {
  const seen = new Set();
  pods.sort((a, b) => a.name.localeCompare(b.name));
  pods.forEach((pod, i) => {
    seen.add(pod.uid);
    let chip = card.chips.get(pod.uid);
    if (!chip) {
      chip = chipFor(pod);
      card.chips.set(pod.uid, chip);
      chip.classList.add("added");
    } else if (!chip.classList.contains(pod.phase)) {
      chip.className = `chip ${pod.phase} changed`;
    }
    labelChip(chip, pod);
    if (box.children[i] !== chip) box.insertBefore(chip, box.children[i] || null);
  });
  for (const [uid, chip] of card.chips) {
    if (seen.has(uid)) continue;
    card.chips.delete(uid);
    chip.classList.add("removed");
    setTimeout(() => chip.remove(), 500);
  }
}

const laneChips = { chips: new Map() };

function renderQueue(pending) {
  const visible = pending.filter(podVisible);
  $("queue-count").textContent = `(${visible.length} pending)`;
  const byLane = { active: [], backoff: [], unschedulable: [], gated: [] };
  for (const pod of visible) (byLane[pod.queue] || byLane.active).push(pod);
  for (const [lane, pods] of Object.entries(byLane)) {
    const list = document.querySelector(`.lane[data-lane="${lane}"] ul`);
    list.innerHTML = "";
    pods.sort((a, b) => a.created.localeCompare(b.created));
    for (const pod of pods.slice(0, 200)) {
      const item = document.createElement("li");
      const chip = chipFor(pod);
      labelChip(chip, pod);
      item.append(chip);
      if (pod.message) {
        const why = document.createElement("span");
        why.className = "why";
        why.textContent = pod.message;
        item.append(why);
      }
      list.append(item);
    }
    if (pods.length > 200) {
      const more = document.createElement("li");
      more.textContent = `… and ${pods.length - 200} more`;
      list.append(more);
    }
  }
}

function renderHeatmap(names, byNode) {
  const canvas = $("heatmap");
  const width = Math.max(300, canvas.parentElement.clientWidth - 4);
  const cell = Math.max(4, Math.floor(Math.sqrt((width * 480) / names.length)));
  const columns = Math.max(1, Math.floor(width / cell));
  canvas.width = columns * cell;
  canvas.height = Math.ceil(names.length / columns) * cell;
  const g = canvas.getContext("2d");
  g.clearRect(0, 0, canvas.width, canvas.height);
  names.forEach((name, i) => {
    const node = state.nodes.get(name);
    const used = allocation(node, byNode.get(name) || []);
    const share = Math.max(node.cpu ? used.cpu / node.cpu : 0, node.memory ? used.memory / node.memory : 0,
      node.pods ? used.count / node.pods : 0);
    const x = (i % columns) * cell, y = Math.floor(i / columns) * cell;
    g.fillStyle = `hsl(${Math.round(120 - 120 * Math.min(1, share))}, 60%, ${node.unschedulable ? 70 : 45}%)`;
    g.fillRect(x, y, cell - 1, cell - 1);
    if (node.ready !== "Ready") {
      g.strokeStyle = "#000";
      g.beginPath(); g.moveTo(x, y); g.lineTo(x + cell - 1, y + cell - 1); g.stroke();
    }
  });
  canvas.onclick = (e) => {
    const rect = canvas.getBoundingClientRect();
    const i = Math.floor((e.clientY - rect.top) / cell) * columns + Math.floor((e.clientX - rect.left) / cell);
    if (names[i]) select({ kind: "Node", name: names[i] });
  };
}

function refreshNamespaces() {
  const select = $("filter-namespace");
  const namespaces = new Set([...state.pods.values()].map((p) => p.namespace));
  const have = new Set([...select.options].map((o) => o.value));
  for (const ns of [...namespaces].sort()) {
    if (!have.has(ns)) { const o = document.createElement("option"); o.value = ns; o.textContent = ns; select.append(o); }
  }
}

// --- details of one object -----------------------------------------------------------------------

function objectPath(sel) {
  if (sel.path) return sel.path;
  if (sel.kind === "Node") return `/api/v1/nodes/${sel.name}`;
  if (sel.kind === "Pod") return `/api/v1/namespaces/${sel.namespace}/pods/${sel.name}`;
  return null;
}

function select(sel) {
  state.selected = sel;
  state.selectedTab = null;
  $("details").hidden = false;
  $("details-command").hidden = true;
  $("details-result").hidden = true;
  state.allDirty = true;
  schedule();
  refreshSelected();
}

let refreshing = null;
async function refreshSelected() {
  const sel = state.selected;
  if (!sel) return;
  if (refreshing) return;
  refreshing = (async () => {
    try { await loadDetails(sel); } finally { refreshing = null; }
  })();
}

async function loadDetails(sel) {
  const path = objectPath(sel);
  const got = await api("GET", path);
  if (state.selected !== sel) return;
  if (!got.ok) {
    $("details-title").textContent = `${sel.kind} ${sel.name}`;
    $("details-body").innerHTML = `<p class="result error">${esc(statusMessage(got))}</p>`;
    $("details-actions").innerHTML = "";
    $("details-tabs").innerHTML = "";
    return;
  }
  const obj = got.json;
  sel.uid = obj.metadata.uid;
  sel.object = obj;
  const ns = obj.metadata.namespace;
  $("details-title").textContent = `${obj.kind} ${ns ? ns + "/" : ""}${obj.metadata.name}`;
  renderActions(sel, obj);
  const tabs = sel.kind === "Pod" ? ["Flow", "Scheduling", "YAML", "Events", "Related"]
    : sel.kind === "Node" ? ["Summary", "YAML", "Events"] : ["YAML", "Events", "Related"];
  const current = state.selectedTab && tabs.includes(state.selectedTab) ? state.selectedTab : tabs[0];
  const list = $("details-tabs");
  list.innerHTML = "";
  for (const tab of tabs) {
    const b = document.createElement("button");
    b.type = "button";
    b.setAttribute("role", "tab");
    b.setAttribute("aria-selected", String(tab === current));
    b.textContent = tab;
    b.addEventListener("click", () => { state.selectedTab = tab; loadDetails(sel); });
    list.append(b);
  }
  const body = $("details-body");
  if (current === "YAML") body.innerHTML = `<pre>${esc(toYaml(obj, "", true))}</pre>` + managedFieldsNote(obj);
  else if (current === "Events") body.innerHTML = await eventsTable(obj);
  else if (current === "Related") body.innerHTML = await relatedHtml(obj);
  else if (current === "Summary") body.innerHTML = nodeSummary(obj);
  else body.innerHTML = await podTab(sel, current);
  for (const link of body.querySelectorAll("[data-path]")) {
    link.addEventListener("click", (e) => {
      e.preventDefault();
      select({ kind: link.dataset.kind, name: link.dataset.name, namespace: link.dataset.namespace,
        path: link.dataset.path });
    });
  }
}

function managedFieldsNote(obj) {
  const mf = obj.metadata.managedFields;
  if (!mf) return "";
  return `<details><summary>managedFields (${mf.length} managers)</summary><pre>${esc(toYaml(mf, ""))}</pre></details>`;
}

async function eventsTable(obj) {
  const ns = obj.metadata.namespace;
  const base = ns ? `/api/v1/namespaces/${ns}/events` : "/api/v1/events";
  const got = await api("GET", `${base}?fieldSelector=${encodeURIComponent("involvedObject.uid=" + obj.metadata.uid)}`);
  if (!got.ok) return `<p class="result error">${esc(statusMessage(got))}</p>`;
  const items = got.json.items.sort((a, b) => String(a.eventTime || a.firstTimestamp).localeCompare(String(b.eventTime || b.firstTimestamp)));
  if (!items.length) return "<p>No Events.</p>";
  const rows = items.map((e) => `<tr><td>${esc(e.type)}</td><td>${esc(e.reason)}</td><td>${esc((e.source || {}).component || e.reportingComponent)}</td>` +
    `<td>${esc(e.count || 1)}</td><td>${esc(e.message)}</td></tr>`).join("");
  return `<table><thead><tr><th>Type</th><th>Reason</th><th>From</th><th>Count</th><th>Message</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function pathOf(apiVersion, kind, namespace, name) {
  const plural = pluralOf(apiVersion, kind);
  if (!plural) return null;
  const prefix = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return namespace ? `${prefix}/namespaces/${namespace}/${plural}/${name}` : `${prefix}/${plural}/${name}`;
}

function pluralOf(apiVersion, kind) {
  const found = state.kinds.find((k) => k.apiVersion === apiVersion && k.kind === kind);
  return found ? found.resource : null;
}

function link(kind, apiVersion, namespace, name) {
  const path = pathOf(apiVersion, kind, namespace, name);
  if (!path) return `${esc(kind)}/${esc(name)}`;
  return `<a href="#" data-path="${esc(path)}" data-kind="${esc(kind)}" data-name="${esc(name)}" ` +
    `data-namespace="${esc(namespace || "")}">${esc(kind)}/${esc(name)}</a>`;
}

async function relatedHtml(obj) {
  await loadKinds();
  const ns = obj.metadata.namespace;
  const owners = (obj.metadata.ownerReferences || []).map((o) => `<li>${link(o.kind, o.apiVersion, ns, o.name)}` +
    `${o.controller ? " (controller)" : ""}</li>`).join("");
  const dependents = [];
  for (const pod of state.pods.values()) {
    if (pod.namespace === ns && pod.owner === `${obj.kind}/${obj.metadata.name}`) dependents.push(link("Pod", "v1", ns, pod.name));
  }
  // Deployments own ReplicaSets, CronJobs own Jobs: look for objects naming this one as their owner.
  const children = { Deployment: ["apps/v1", "ReplicaSet"], CronJob: ["batch/v1", "Job"] }[obj.kind];
  if (children && ns) {
    const path = pathOf(children[0], children[1], ns, "").replace(/\/$/, "");
    const got = await api("GET", path);
    for (const item of (got.json && got.json.items) || []) {
      if ((item.metadata.ownerReferences || []).some((o) => o.uid === obj.metadata.uid)) {
        dependents.push(link(children[1], children[0], ns, item.metadata.name));
      }
    }
  }
  return `<h3>Owners</h3><ul>${owners || "<li>none</li>"}</ul><h3>Dependents</h3><ul>` +
    `${dependents.map((d) => `<li>${d}</li>`).join("") || "<li>none</li>"}</ul>`;
}

function nodeSummary(node) {
  const status = node.status || {};
  const conditions = (status.conditions || []).map((c) => `<tr><td>${esc(c.type)}</td><td>${esc(c.status)}</td>` +
    `<td>${esc(c.reason)}</td><td>${esc(c.message)}</td></tr>`).join("");
  const rows = ["cpu", "memory", "pods"].map((r) => `<tr><td>${r}</td><td>${esc((status.capacity || {})[r])}</td>` +
    `<td>${esc((status.allocatable || {})[r])}</td></tr>`).join("");
  const labels = Object.entries(node.metadata.labels || {}).map(([k, v]) => `<li><code>${esc(k)}=${esc(v)}</code></li>`).join("");
  return `<h3>Conditions</h3><table><thead><tr><th>Type</th><th>Status</th><th>Reason</th><th>Message</th></tr></thead>` +
    `<tbody>${conditions}</tbody></table><h3>Resources</h3><table><thead><tr><th></th><th>Capacity</th>` +
    `<th>Allocatable</th></tr></thead><tbody>${rows}</tbody></table><h3>Labels</h3><ul>${labels}</ul>`;
}

async function podTab(sel, tab) {
  const response = await fetch(`/ui/pods/${encodeURIComponent(sel.namespace)}/${encodeURIComponent(sel.name)}`);
  const details = await response.json();
  if (!response.ok) return `<p class="result error">${esc(details.message)}</p>`;
  if (tab === "Flow") {
    const rows = details.steps.map((s) => `<tr class="${s.done ? "" : "pending"}"><td>${s.step}</td>` +
      `<td>${esc(s.component)}</td><td>${s.seconds === null ? "-" : (s.seconds >= 0 ? "+" : "") + s.seconds.toFixed(3) + "s"}</td>` +
      `<td>${esc(s.resource_version || "-")}</td><td class="${s.done ? "" : "pending"}">${esc(s.what)}</td></tr>`).join("");
    return `<p>${esc(details.title)}</p><table class="steps" aria-label="The 13 steps"><thead><tr><th>Step</th>` +
      `<th>Component</th><th>Time</th><th>RV</th><th>What</th></tr></thead><tbody>${rows}</tbody></table>`;
  }
  return decisionHtml(details.decision);
}

function decisionHtml(decision) {
  const filter = decision.filter;
  if (!filter) return "<p>The scheduler has not decided on this Pod (or it named its node itself).</p>";
  let html = `<p>Filtered ${filter.evaluated} of ${filter.nodes} nodes: <strong>${filter.feasible} feasible</strong>.</p>`;
  if (filter.allNodes) html += `<p>Every node: ${esc(filter.allNodes.plugin)}: ${esc(filter.allNodes.reasons.join(", "))}</p>`;
  if (filter.rejected && filter.rejected.length) {
    html += `<h3>Rejected, by reason</h3><table><thead><tr><th>Plugin</th><th>Reasons</th><th>Nodes</th></tr></thead><tbody>` +
      filter.rejected.map((g) => `<tr><td>${esc(g.plugin)}</td><td>${esc(g.reasons.join(", "))}</td>` +
        `<td>${g.count}: ${esc((g.nodes || []).join(", "))}${g.nodes && g.nodes.length < g.count ? ", …" : ""}</td></tr>`).join("") +
      "</tbody></table>";
  }
  const score = decision.score;
  if (score && score.nodes && score.nodes.length) {
    const plugins = Object.keys(score.weights).filter((p) => score.nodes.some((n) => p in n.scores));
    html += `<h3>Scores of the best nodes</h3><p>Each cell: the plugin's normalized score × its weight (raw score in brackets).</p>` +
      `<table aria-label="Scores"><thead><tr><th>Node</th><th>Total</th>` +
      `${plugins.map((p) => `<th>${esc(p)} ×${score.weights[p]}</th>`).join("")}</tr></thead><tbody>` +
      score.nodes.map((n) => `<tr class="${n.node === decision.selected ? "chosen" : ""}"><td>${esc(n.node)}` +
        `${n.node === decision.selected ? " (chosen)" : ""}</td><td>${n.total}</td>` +
        plugins.map((p) => n.scores[p] ? `<td>${n.scores[p].final} (${n.scores[p].raw})</td>` : "<td>-</td>").join("") +
        `</tr>`).join("") + "</tbody></table>";
    if (score.skipped && score.skipped.length) html += `<p>Skipped by PreScore: ${esc(score.skipped.join(", "))}</p>`;
  }
  return html;
}

// --- actions, each done through the API as kubectl does it ------------------------------------------

function renderActions(sel, obj) {
  const box = $("details-actions");
  box.innerHTML = "";
  const add = (label, handler) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.addEventListener("click", handler);
    box.append(b);
  };
  const ns = obj.metadata.namespace;
  const name = obj.metadata.name;
  const kindArg = obj.kind.toLowerCase();
  if (sel.kind === "Node") {
    const cordoned = !!(obj.spec || {}).unschedulable;
    add(cordoned ? "Uncordon" : "Cordon", () => act(sel, `kubectl ${cordoned ? "uncordon" : "cordon"} ${name}`,
      () => api("PATCH", objectPath(sel), { contentType: "application/strategic-merge-patch+json",
        body: JSON.stringify({ spec: { unschedulable: cordoned ? null : true } }) })));
    add("Taint…", () => openTaint(sel, obj));
    for (const t of (obj.spec || {}).taints || []) {
      add(`Untaint ${t.key}:${t.effect}`, () => act(sel, `kubectl taint nodes ${name} ${t.key}:${t.effect}-`,
        () => setTaints(sel, ((obj.spec || {}).taints || []).filter((x) => !(x.key === t.key && x.effect === t.effect)))));
    }
    add("Stop node", () => act(sel, `kubesim node stop ${name}`, () => nodeAction(name, "stop")));
    add("Start node", () => act(sel, `kubesim node start ${name}`, () => nodeAction(name, "start")));
    return;
  }
  if (SCALABLE.has(obj.kind)) {
    add("Scale…", () => {
      const replicas = prompt(`Replicas of ${obj.kind} ${name}`, String((obj.spec || {}).replicas ?? 1));
      if (replicas === null) return;
      act(sel, `kubectl scale ${kindArg} ${name} -n ${ns} --replicas=${replicas}`,
        () => api("PATCH", objectPath(sel) + "/scale", { contentType: "application/merge-patch+json",
          body: JSON.stringify({ spec: { replicas: Number(replicas) } }) }));
    });
  }
  // As kubectl delete does: Background, whatever the kind's default (RCs and Jobs would orphan their Pods).
  add("Delete", () => act(sel, `kubectl delete ${kindArg} ${name}${ns ? " -n " + ns : ""}`,
    () => api("DELETE", objectPath(sel), { contentType: "application/json",
      body: JSON.stringify({ kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background" }) })));
}

async function act(sel, command, request) {
  const cmd = $("details-command");
  cmd.hidden = false;
  cmd.querySelector("code").textContent = command;
  const result = await request();
  const box = $("details-result");
  box.hidden = false;
  const error = statusMessage(result);
  box.className = "result" + (error ? " error" : "");
  box.textContent = error ? `Error from server: ${error}` : (result.json && result.json.message) || "done";
  if (!error) refreshSelected();
}

function setTaints(sel, taints) {
  return api("PATCH", objectPath(sel), { contentType: "application/merge-patch+json",
    body: JSON.stringify({ spec: { taints: taints.length ? taints : null } }) });
}

function openTaint(sel, obj) {
  const dialog = $("taint-dialog");
  $("taint-submit").onclick = () => {
    const taint = { key: $("taint-key").value, effect: $("taint-effect").value };
    if ($("taint-value").value) taint.value = $("taint-value").value;
    dialog.close();
    const text = `${taint.key}${taint.value ? "=" + taint.value : ""}:${taint.effect}`;
    act(sel, `kubectl taint nodes ${obj.metadata.name} ${text}`,
      () => setTaints(sel, [...((obj.spec || {}).taints || []).filter((t) => !(t.key === taint.key && t.effect === taint.effect)), taint]));
  };
  dialog.showModal();
}

async function nodeAction(name, action) {
  const response = await fetch(`/ui/nodes/${encodeURIComponent(name)}/${action}`, { method: "POST" });
  const json = await response.json();
  return { ok: response.ok, status: response.status, json, text: json.message };
}

// --- creating objects ----------------------------------------------------------------------------

function formYaml() {
  const kind = $("create-kind").value;
  const name = $("create-name").value;
  const ns = $("create-namespace").value;
  const container = { name: "app", image: $("create-image").value };
  const requests = {};
  if ($("create-cpu").value) requests.cpu = $("create-cpu").value;
  if ($("create-memory").value) requests.memory = $("create-memory").value;
  if (Object.keys(requests).length) container.resources = { requests };
  const spec = { containers: [container] };
  const selector = $("create-selector").value.trim();
  if (selector) spec.nodeSelector = Object.fromEntries(selector.split(",").map((t) => t.split("=").map((x) => x.trim())));
  let obj;
  if (kind === "Pod") obj = { apiVersion: "v1", kind, metadata: { name, namespace: ns, labels: { app: name } }, spec };
  else {
    obj = { apiVersion: "v1", kind, metadata: { name, namespace: ns },
      spec: { replicas: Number($("create-replicas").value || 1), selector: { app: name },
        template: { metadata: { labels: { app: name } }, spec } } };
  }
  return toYaml(obj, "");
}

function setupCreate() {
  const dialog = $("create-dialog");
  const showTab = (yaml) => {
    $("create-tab-form").setAttribute("aria-selected", String(!yaml));
    $("create-tab-yaml").setAttribute("aria-selected", String(yaml));
    $("create-fields").hidden = yaml;
    $("create-yaml-label").hidden = !yaml;
  };
  const namespace = () => $("create-namespace").value || "default";
  const updateCommand = () => { $("create-command").querySelector("code").textContent = `kubectl create -n ${namespace()} -f -`; };
  $("create-button").addEventListener("click", () => { showTab(false); $("create-result").hidden = true; updateCommand(); dialog.showModal(); });
  $("create-tab-form").addEventListener("click", () => showTab(false));
  $("create-tab-yaml").addEventListener("click", () => { if (!$("create-yaml").value.trim()) $("create-yaml").value = formYaml(); showTab(true); });
  $("create-fields").addEventListener("input", updateCommand);
  $("create-submit").addEventListener("click", async () => {
    const text = $("create-yaml-label").hidden ? formYaml() : $("create-yaml").value;
    const response = await fetch(`/ui/apply?namespace=${encodeURIComponent(namespace())}`, { method: "POST", body: text });
    const answer = await response.json();
    const box = $("create-result");
    box.hidden = false;
    const failed = answer.error || answer.results.some((r) => r.code >= 300);
    box.className = "result" + (failed ? " error" : "");
    box.textContent = answer.error ? answer.error :
      answer.results.map((r) => (r.code >= 300 ? `Error from server: ${r.message}` : r.message)).join("\n");
    $("create-command").querySelector("code").textContent = answer.command;
  });
}

// --- objects of every kind -----------------------------------------------------------------------

async function loadKinds() {
  if (state.kinds.length) return;
  const kinds = [];
  for (const root of ["/api", "/apis"]) {
    const got = await api("GET", root, { accept: AGGREGATED });
    for (const group of (got.json && got.json.items) || []) {
      const version = group.versions[0];
      const groupName = group.metadata.name || "";
      for (const r of version.resources) {
        kinds.push({ group: groupName, version: version.version, resource: r.resource,
          kind: r.responseKind.kind, namespaced: r.scope === "Namespaced", verbs: r.verbs,
          apiVersion: groupName ? `${groupName}/${version.version}` : version.version });
      }
    }
  }
  state.kinds = kinds;
}

async function showKinds() {
  await loadKinds();
  const list = $("kinds");
  list.innerHTML = "";
  let lastGroup = null;
  for (const k of state.kinds.filter((k) => k.verbs.includes("list"))) {
    if (k.group !== lastGroup) {
      const head = document.createElement("li");
      head.className = "group";
      head.textContent = k.group || "core";
      list.append(head);
      lastGroup = k.group;
    }
    const item = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = k.resource;
    // Under its group's heading the plural is enough to see; its accessible name says the group too, as
    // kubectl spells it (pods.metrics.k8s.io is not the core's pods).
    if (k.group) b.setAttribute("aria-label", `${k.resource}.${k.group}`);
    b.setAttribute("aria-pressed", "false");
    b.addEventListener("click", () => {
      for (const other of list.querySelectorAll("button")) other.setAttribute("aria-pressed", "false");
      b.setAttribute("aria-pressed", "true");
      openTable(k);
    });
    item.append(b);
    list.append(item);
  }
}

async function openTable(k, more = false) {
  const ns = state.filters.namespace;
  const prefix = k.group ? `/apis/${k.group}/${k.version}` : `/api/${k.version}`;
  const base = k.namespaced && ns ? `${prefix}/namespaces/${ns}/${k.resource}` : `${prefix}/${k.resource}`;
  const params = new URLSearchParams({ limit: "500" });
  if (more && state.table && state.table.continue) params.set("continue", state.table.continue);
  const got = await api("GET", `${base}?${params}`, { accept: TABLE });
  $("table-title").textContent = `${k.resource}${k.group ? "." + k.group : ""}`;
  if (!got.ok) {
    $("objects-table").querySelector("tbody").innerHTML = `<tr><td class="result error">${esc(statusMessage(got))}</td></tr>`;
    return;
  }
  const table = got.json;
  const columns = table.columnDefinitions.map((c, i) => ({ ...c, index: i })).filter((c) => c.priority === 0);
  const rows = (more && state.table ? state.table.rows : []).concat(table.rows);
  state.table = { kind: k, columns, rows, continue: table.metadata.continue, base };
  $("table-more").hidden = !table.metadata.continue;
  $("objects-table").querySelector("thead").innerHTML =
    `<tr>${k.namespaced ? "<th>Namespace</th>" : ""}${columns.map((c) => `<th>${esc(c.name)}</th>`).join("")}</tr>`;
  $("table-scroll").scrollTop = 0;
  drawRows();
}

function drawRows() {
  const t = state.table;
  if (!t) return;
  const scroll = $("table-scroll");
  $("table-spacer").style.height = `${(t.rows.length + 1) * ROW_HEIGHT}px`;
  const first = Math.max(0, Math.floor(scroll.scrollTop / ROW_HEIGHT) - 10);
  const last = Math.min(t.rows.length, first + Math.ceil(scroll.clientHeight / ROW_HEIGHT) + 20);
  const table = $("objects-table");
  table.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
  const body = table.querySelector("tbody");
  body.innerHTML = "";
  for (let i = first; i < last; i++) {
    const row = t.rows[i];
    const meta = (row.object && row.object.metadata) || {};
    const tr = document.createElement("tr");
    tr.className = "clickable";
    tr.tabIndex = 0;
    tr.style.height = `${ROW_HEIGHT}px`;
    tr.innerHTML = (t.kind.namespaced ? `<td>${esc(meta.namespace)}</td>` : "") +
      t.columns.map((c) => `<td>${esc(row.cells[c.index])}</td>`).join("");
    const open = () => {
      const name = meta.name || row.cells[0];
      const k = t.kind;
      const prefix = k.group ? `/apis/${k.group}/${k.version}` : `/api/${k.version}`;
      const path = k.namespaced ? `${prefix}/namespaces/${meta.namespace}/${k.resource}/${name}` : `${prefix}/${k.resource}/${name}`;
      select({ kind: k.kind, name, namespace: meta.namespace, path });
    };
    tr.addEventListener("click", open);
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter") open(); });
    body.append(tr);
  }
}

// --- YAML ----------------------------------------------------------------------------------------

function yamlScalar(v) {
  if (v === null || v === undefined) return "null";
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  const s = String(v);
  if (s === "" || /^[\s#&*!|>'"%@`{}[\],?:-]|:\s|\s#|\s$|\n|^(true|false|null|yes|no|on|off|~)$/i.test(s) || /^[-+]?[0-9.]+$/.test(s)) {
    return JSON.stringify(s);
  }
  return s;
}

function toYaml(value, indent, foldManaged = false) {
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    return value.map((item) => {
      const inner = toYaml(item, indent + "  ", foldManaged);
      return typeof item === "object" && item !== null && !Array.isArray(item) && Object.keys(item).length
        ? `${indent}- ${inner.trimStart()}` : `${indent}- ${inner.trim()}`;
    }).join("\n");
  }
  if (value && typeof value === "object") {
    const keys = Object.keys(value);
    if (!keys.length) return "{}";
    return keys.map((k) => {
      const v = value[k];
      if (foldManaged && k === "managedFields") return `${indent}managedFields: # folded: ${v.length} entries, shown below`;
      if (v && typeof v === "object" && (Array.isArray(v) ? v.length : Object.keys(v).length)) {
        return `${indent}${yamlScalar(k)}:\n${toYaml(v, indent + "  ", foldManaged)}`;
      }
      return `${indent}${yamlScalar(k)}: ${v && typeof v === "object" ? toYaml(v, "") : yamlScalar(v)}`;
    }).join("\n");
  }
  return indent + yamlScalar(value);
}

// --- wiring --------------------------------------------------------------------------------------

function route() {
  const objects = location.hash === "#objects";
  $("cluster-view").hidden = objects;
  $("objects-view").hidden = !objects;
  $("nav-cluster").toggleAttribute("aria-current", !objects);
  $("nav-objects").toggleAttribute("aria-current", objects);
  if (objects) { $("nav-objects").setAttribute("aria-current", "page"); showKinds(); }
  else { $("nav-cluster").setAttribute("aria-current", "page"); state.allDirty = true; schedule(); }
}

function setup() {
  for (const [id, key] of [["filter-namespace", "namespace"], ["filter-labels", "labels"], ["filter-owner", "owner"]]) {
    $(id).addEventListener("input", () => {
      state.filters[key] = $(id).value.trim();
      state.allDirty = true;
      schedule();
      if (key === "namespace" && state.table && location.hash === "#objects") openTable(state.table.kind);
    });
  }
  $("details-close").addEventListener("click", () => { state.selected = null; $("details").hidden = true; state.allDirty = true; schedule(); });
  $("table-scroll").addEventListener("scroll", () => requestAnimationFrame(drawRows));
  // One page at a time: a second click while the next page is on its way would ask for the same page again.
  $("table-more").addEventListener("click", async () => {
    const more = $("table-more");
    more.disabled = true;
    try {
      await openTable(state.table.kind, true);
    } finally {
      more.disabled = false;
    }
  });
  window.addEventListener("hashchange", route);
  window.addEventListener("resize", () => { state.allDirty = true; schedule(); });
  setupCreate();
  route();
  connect();
  loadKinds();
}

setup();
