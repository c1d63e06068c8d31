"use strict";
// The on-call dashboard: polls three endpoints and renders seven panels. Everything that comes from the
// service goes into the page as text (never as markup): table ids, commit users and conflict messages
// are chosen by writers.

const REFRESH_MS = 3000;
const TABLES_PER_PAGE = 50;
const TOKEN_KEY = "coordinator.dashboard.token";
const BATCH_IDENTIFIER_FLOOR = 9.2233720368547e18; // 2^63-1 does not survive as a JS number; near it is "batch"
const PHASE_ORDER = ["lockWait", "reconcile", "conflictCheck", "manifestWrite", "commitPoint", "publish"];

class AuthNeeded extends Error {}
class Forbidden extends Error {}

// ---------------------------------------------------------------- fetching

async function getJson(path) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch(path, { headers, cache: "no-store" });
  } catch {
    throw new Error("service unreachable");
  }
  if (response.status === 401) throw new AuthNeeded();
  if (response.status === 403) throw new Forbidden();
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return response.json();
}

// ---------------------------------------------------------------- small DOM helpers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) node.setAttribute(name, String(value));
  }
  node.append(...children.map((c) => (c instanceof Node ? c : String(c))));
  return node;
}

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  node.append(...children.map((c) => (c instanceof Node ? c : String(c))));
  return node;
}

/** A table; `columns` are [label, numeric?], rows are <tr> elements. */
function grid(columns, rows) {
  const head = el("tr", {}, ...columns.map(([label, numeric]) => el("th", { class: numeric ? "num" : null }, label)));
  return el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows));
}

const num = (value, attrs = {}) => el("td", { class: "num", ...attrs }, value);

function panel(testId, ...nodes) {
  document.querySelector(`[data-testid="${testId}"] .body`).replaceChildren(...nodes);
}

function unavailable(testId, error) {
  const reason = error instanceof Forbidden ? "this token may not read" : `unavailable (${error.message})`;
  panel(testId, el("p", { class: "unavailable", "data-testid": "unavailable" }, reason));
}

// ---------------------------------------------------------------- formatting

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

function duration(seconds) {
  const s = Math.max(0, seconds);
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.floor(s % 60)} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

const known = (value, format) => (value === null || value === undefined ? "—" : format(value));
const ms = (value) => (value < 10 ? value.toFixed(2) : value < 100 ? value.toFixed(1) : value.toFixed(0));
const count = (n) => n.toLocaleString("en-US");
const identifier = (n) => (n >= BATCH_IDENTIFIER_FLOOR ? "batch" : String(n));

function clock(epochSeconds) {
  const d = new Date(epochSeconds * 1000);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((v) => String(v).padStart(2, "0")).join(":");
}

// ---------------------------------------------------------------- panels

function renderTotals(overview) {
  const t = overview.totals;
  const unknown = t.unknown ? `, ${count(t.unknown)} not sized yet` : "";
  document.getElementById("tables-total").textContent =
    `${count(t.tables)} tables · ${count(t.totalRecordCount)} records · ${count(t.fileCount)} files · ` +
    `${bytes(t.fileBytes)}${unknown}`;
}

function renderTables(overview) {
  renderPager(overview);
  if (overview.tables.length === 0) {
    const empty = tablePage.prefix ? `no table matches ${tablePage.prefix}` : "no tables yet";
    return panel("panel-tables", el("p", { class: "empty", "data-testid": "tables-empty" }, empty));
  }
  const rows = overview.tables.map((t) =>
    el(
      "tr",
      { "data-testid": "table-row", "data-table-id": t.tableId },
      el("td", { "data-testid": "table-id" }, t.tableId),
      num(t.latestSnapshotId || "—", { "data-testid": "table-snapshot" }),
      num(known(t.totalRecordCount, count), { "data-testid": "table-records" }),
      num(known(t.fileBytes, bytes), {
        "data-testid": "table-bytes",
        title: t.fileBytes === null ? "not known yet" : `${count(t.fileBytes)} bytes`,
      }),
      num(known(t.fileCount, count), { "data-testid": "table-files" }),
      num(count(t.committed), { class: "num committed", "data-testid": "table-committed" }),
      num(count(t.rejected), { class: t.rejected ? "num rejected" : "num", "data-testid": "table-rejected" }),
      el(
        "td",
        { class: "type", "data-testid": "table-conflicts" },
        Object.entries(t.conflicts)
          .map(([type, n]) => `${type} (${n})`)
          .join(", "),
        // A writer outside the coordinator overwrote acknowledged snapshots: the one thing here that
        // says the table has writers that do not commit through the service.
        t.overwritten
          ? el(
              "div",
              {
                class: "rejected",
                "data-testid": "table-overwritten",
                title: "acknowledged commits whose snapshot another writer overwrote; each was applied again",
              },
              `overwritten by an outside writer (${count(t.overwritten)})`,
            )
          : "",
      ),
      num(t.lastCommitAt === null ? "never" : `${duration(overview.now - t.lastCommitAt)} ago`),
    ),
  );
  const columns = [
    ["Table"], ["Snapshot", 1], ["Records", 1], ["Size", 1], ["Files", 1],
    ["Committed", 1], ["Rejected", 1], ["Rejections by type"], ["Last commit", 1],
  ];
  panel("panel-tables", grid(columns, rows));
}

function renderLocks(response) {
  if (response.locks.length === 0) return panel("panel-locks", el("p", { class: "empty" }, "no lock is held"));
  const rows = response.locks.flatMap((lock) => {
    const left = lock.expiresAt - response.now;
    const row = el(
      "tr",
      { "data-testid": "lock-row", "data-lock-id": lock.lockId },
      el("td", { title: lock.lockId }, lock.tableId ?? lock.lockId),
      el("td", { "data-testid": "lock-owner" }, lock.owner),
      num(lock.epoch, { "data-testid": "lock-epoch" }),
      num(duration(response.now - lock.acquiredAt), { "data-testid": "lock-age" }),
      num(duration(left), { class: left < 2 ? "num expiring" : "num", "data-testid": "lock-expires" }),
      num(lock.waiters.length, { "data-testid": "lock-waiting" }),
    );
    const waiters = lock.waiters.map((w) =>
      el(
        "tr",
        { class: "waiter", "data-testid": "lock-waiter", "data-lock-id": lock.lockId },
        el("td", { colspan: 3 }, `waiting: ${w.commitUser} #${identifier(w.identifier)}`),
        num(`${ms(w.waitingMs)} ms`),
        el("td", { colspan: 2 }),
      ),
    );
    return [row, ...waiters];
  });
  const columns = [["Table"], ["Owner"], ["Epoch", 1], ["Held for", 1], ["Expires in", 1], ["Waiting", 1]];
  panel("panel-locks", grid(columns, rows));
}

function renderInFlight(response) {
  if (response.inFlight.length === 0) return panel("panel-inflight", el("p", { class: "empty" }, "none"));
  const rows = response.inFlight.map((c) =>
    el(
      "tr",
      { "data-testid": "inflight-row", "data-table-id": c.tableId },
      // A multi-table transaction is one entry naming all its tables.
      el("td", {}, c.tables ? c.tables.join(", ") : c.tableId),
      el("td", {}, c.commitUser),
      num(identifier(c.identifier)),
      el("td", { class: "type", "data-testid": "inflight-phase" }, c.phase),
      num(`${ms(c.elapsedMs)} ms`, { "data-testid": "inflight-elapsed" }),
    ),
  );
  const columns = [["Table"], ["Commit user"], ["Identifier", 1], ["Phase"], ["Elapsed", 1]];
  panel("panel-inflight", grid(columns, rows));
}

function renderThroughput(overview) {
  const minutes = overview.commitsPerMinute;
  const [width, height, left, bottom] = [600, 170, 34, 18];
  const plotHeight = height - bottom - 6;
  const peak = Math.max(1, ...minutes.map((m) => m.committed + m.rejected));
  const step = (width - left) / Math.max(1, minutes.length);
  const y = (n) => (n / peak) * plotHeight;
  const bars = minutes.map((m, i) => {
    const x = left + i * step + step * 0.1;
    const w = Math.max(1, step * 0.8);
    const base = height - bottom;
    return svg(
      "g",
      { "data-testid": "minute-bar", "data-minute": m.minute },
      svg("title", {}, `${clock(m.minute)}  ${m.committed} committed, ${m.rejected} rejected`),
      svg("rect", { class: "bar-committed", x, y: base - y(m.committed), width: w, height: y(m.committed) }),
      svg("rect", {
        class: "bar-rejected",
        x,
        y: base - y(m.committed) - y(m.rejected),
        width: w,
        height: y(m.rejected),
      }),
    );
  });
  const chart = svg(
    "svg",
    { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "data-testid": "throughput-chart" },
    svg("line", { class: "axis", x1: left, x2: width, y1: height - bottom, y2: height - bottom }),
    svg("line", { class: "axis", x1: left, x2: width, y1: height - bottom - plotHeight, y2: height - bottom - plotHeight }),
    svg("text", { x: left - 4, y: height - bottom - plotHeight + 4, "text-anchor": "end" }, peak),
    svg("text", { x: left - 4, y: height - bottom + 4, "text-anchor": "end" }, 0),
    svg("text", { x: left, y: height - 4 }, minutes.length ? clock(minutes[0].minute) : ""),
    svg("text", { x: width, y: height - 4, "text-anchor": "end" }, "now"),
    ...bars,
  );
  const committed = minutes.reduce((sum, m) => sum + m.committed, 0);
  const rejected = minutes.reduce((sum, m) => sum + m.rejected, 0);
  const legend = el(
    "div",
    { class: "legend", "data-testid": "throughput-total" },
    el("span", { class: "committed" }, `${count(committed)} committed`),
    el("span", { class: "rejected" }, `${count(rejected)} rejected`),
    `in the last ${overview.windowMinutes} min`,
  );
  panel("panel-throughput", chart, legend);
}

function phaseRank(phase) {
  if (phase === "total") return PHASE_ORDER.length + 1;
  const known = PHASE_ORDER.indexOf(phase);
  return known === -1 ? PHASE_ORDER.length : known;
}

function renderLatency(overview) {
  const phases = Object.entries(overview.phaseLatencyMs).sort(
    ([a], [b]) => phaseRank(a) - phaseRank(b) || a.localeCompare(b),
  );
  if (phases.length === 0) {
    return panel("panel-latency", el("p", { class: "empty" }, "no commits in the window"));
  }
  const widest = Math.max(...phases.map(([, l]) => l.p95), 0.001);
  const rows = phases.map(([phase, l]) =>
    el(
      "tr",
      { "data-testid": "latency-row", "data-phase": phase },
      el("td", { class: "type" }, phase),
      num(count(l.count)),
      num(ms(l.p50), { "data-testid": "latency-p50" }),
      num(ms(l.p95), { "data-testid": "latency-p95" }),
      num(ms(l.max), { "data-testid": "latency-max" }),
      el("td", {}, el("div", { class: "meter" }, el("div", { style: `width: ${(100 * l.p95) / widest}%` }))),
    ),
  );
  const columns = [["Phase"], ["Count", 1], ["p50", 1], ["p95", 1], ["Max", 1], ["p95"]];
  panel("panel-latency", grid(columns, rows));
}

function renderQueue(overview) {
  // This instance's own (each replica has its queue); null for a token limited by a grant.
  const queue = overview.commitQueue;
  if (!queue) {
    return panel("panel-queue", el("p", { class: "empty" }, "shown to tokens that may read every table"));
  }
  const refused = Object.values(queue.refused).reduce((sum, n) => sum + n, 0);
  const reasons = Object.entries(queue.refused)
    .map(([reason, n]) => `${reason} ${count(n)}`)
    .join(" · ");
  const over = queue.waitSeconds > queue.limitSeconds;
  const row = (label, value, testId, warn) =>
    el("tr", {}, el("td", {}, label), num(value, { class: warn ? "num rejected" : "num", "data-testid": testId }));
  const rows = [
    row("Commits waiting", count(queue.waiting), "queue-waiting", false),
    row("Longest wait for a new commit", `${queue.waitSeconds.toFixed(1)} s of ${queue.limitSeconds} s`, "queue-wait", over),
    row(`Refused (429) in the last ${overview.windowMinutes} min`, count(refused), "queue-refused", refused > 0),
    row("Refused by reason", reasons, "queue-refused-reasons", false),
    row("Refused this minute", count(queue.refusedLastMinute), "queue-refused-minute", queue.refusedLastMinute > 0),
  ];
  panel("panel-queue", el("table", {}, el("tbody", {}, ...rows)));
}

function renderConflicts(overview) {
  if (overview.conflicts.length === 0) return panel("panel-conflicts", el("p", { class: "empty" }, "no conflicts"));
  const rows = overview.conflicts.map((c) =>
    el(
      "tr",
      { "data-testid": "conflict-row", "data-table-id": c.tableId },
      el("td", {}, clock(c.at)),
      el("td", {}, c.tableId),
      el("td", {}, c.commitUser),
      num(identifier(c.identifier)),
      el("td", { class: "type rejected", "data-testid": "conflict-type" }, c.type),
      el("td", { class: "message", "data-testid": "conflict-message" }, c.message),
    ),
  );
  const columns = [["At"], ["Table"], ["Commit user"], ["Identifier", 1], ["Type"], ["Reason"]];
  panel("panel-conflicts", grid(columns, rows));
}

// ---------------------------------------------------------------- table paging and search

/** Which page of tables the panel shows: a name prefix (or database.prefix) and the page's token. */
const tablePage = { prefix: "", token: null, number: 1, next: null };

function tableQuery() {
  const params = new URLSearchParams({ limit: String(TABLES_PER_PAGE) });
  const dot = tablePage.prefix.indexOf(".");
  if (dot === -1) {
    if (tablePage.prefix) params.set("name_prefix", tablePage.prefix);
  } else {
    params.set("database", tablePage.prefix.slice(0, dot));
    if (dot + 1 < tablePage.prefix.length) params.set("name_prefix", tablePage.prefix.slice(dot + 1));
  }
  if (tablePage.token) params.set("page_token", tablePage.token);
  return params.toString();
}

function renderPager(overview) {
  tablePage.next = overview.nextPageToken;
  document.getElementById("tables-next").disabled = tablePage.next === null;
  document.getElementById("tables-first").disabled = tablePage.token === null;
  const more = tablePage.next === null ? "" : ", more follow";
  document.getElementById("tables-page").textContent = `page ${tablePage.number}${more}`;
}

function showTables(prefix, token, number) {
  Object.assign(tablePage, { prefix, token, number });
  tick();
}

document.getElementById("table-search").addEventListener("submit", (event) => event.preventDefault());
document.getElementById("table-prefix").addEventListener("input", (event) => {
  showTables(event.target.value.trim(), null, 1);
});
document.getElementById("tables-next").addEventListener("click", () => {
  if (tablePage.next !== null) showTables(tablePage.prefix, tablePage.next, tablePage.number + 1);
});
document.getElementById("tables-first").addEventListener("click", () => showTables(tablePage.prefix, null, 1));

// ---------------------------------------------------------------- access control

const authForm = document.getElementById("auth");
const forbidden = document.getElementById("forbidden");

function askForToken() {
  const had = sessionStorage.getItem(TOKEN_KEY);
  document.getElementById("auth-error").textContent = had ? "the service refused that token" : "";
  authForm.hidden = false;
  document.getElementById("updated").textContent = "token needed";
}

authForm.addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
  document.getElementById("token").value = "";
  authForm.hidden = true;
  tick();
});

document.getElementById("forget").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  forbidden.hidden = true;
  askForToken();
});

// ---------------------------------------------------------------- polling

const windowSelect = document.getElementById("window");

/** One refresh of every panel; false when polling must wait for a token. */
async function refresh() {
  const [overview, locks, commits] = await Promise.allSettled([
    getJson(`/ops/overview?minutes=${windowSelect.value}&${tableQuery()}`),
    getJson("/locks"),
    getJson("/commits?limit=20"),
  ]);
  const errors = [overview, locks, commits].filter((r) => r.status === "rejected").map((r) => r.reason);
  if (errors.some((e) => e instanceof AuthNeeded)) {
    askForToken();
    return false;
  }
  forbidden.hidden = !errors.some((e) => e instanceof Forbidden);

  if (overview.status === "fulfilled") {
    renderTotals(overview.value);
    renderTables(overview.value);
    renderThroughput(overview.value);
    renderLatency(overview.value);
    renderQueue(overview.value);
    renderConflicts(overview.value);
  } else {
    for (const id of ["panel-tables", "panel-throughput", "panel-latency", "panel-queue", "panel-conflicts"]) {
      unavailable(id, overview.reason);
    }
  }
  if (locks.status === "fulfilled") renderLocks(locks.value);
  else unavailable("panel-locks", locks.reason);
  if (commits.status === "fulfilled") renderInFlight(commits.value);
  else unavailable("panel-inflight", commits.reason);

  const updated = document.getElementById("updated");
  updated.textContent = `updated ${clock(Date.now() / 1000)}`;
  updated.classList.toggle("stale", errors.length > 0);
  return true;
}

let timer = null;
let busy = false;
let rerun = false; // asked for while a refresh was in flight (a search typed): run again right after

async function tick() {
  clearTimeout(timer);
  if (busy) {
    rerun = true;
    return;
  }
  busy = true;
  let again = true;
  try {
    again = await refresh();
  } catch (error) {
    console.error("dashboard refresh failed", error); // a rendering bug must not stop the polling
  } finally {
    busy = false;
  }
  const soon = rerun;
  rerun = false;
  if (again) timer = setTimeout(tick, soon ? 0 : REFRESH_MS);
}

windowSelect.addEventListener("change", tick);
tick();
