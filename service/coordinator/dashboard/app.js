"use strict";
// The on-call dashboard: three views behind client-side routes (#/ the overview, #/tables/<id> one
// table, #/ops the feed's consumers and publishers). The latest changes come from the event feed
// (GET /events/stream, read with fetch so a bearer token can go with it, resumed with Last-Event-ID);
// what the feed does not carry (rejections, locks, queue state, lags) is read every few seconds for
// the view on screen only. Everything that comes from the service goes into the page as text (never as
// markup): table ids, commit users and conflict messages are chosen by writers.

// Rejected commits write no event and locks move without one: the state panels still need reading.
const STATE_REFRESH_MS = 5000;
// A consumer's lag moves when it reads, which writes no event either.
const OPS_REFRESH_MS = 2000;
const LIVE_ROWS = 50;
const HISTORY_LIMIT = 1000;
// The stream sends a comment every 15 s; silence much longer than that is a dead connection.
const STREAM_SILENCE_MS = 40000;
const TABLES_PER_PAGE = 50;
const TOKEN_KEY = "coordinator.dashboard.token";
const BATCH_IDENTIFIER_FLOOR = 9.2233720368547e18; // 2^63-1 does not survive as a JS number; near it is "batch"
const PHASE_ORDER = ["lockWait", "reconcile", "conflictCheck", "manifestWrite", "commitPoint", "publish"];

class AuthNeeded extends Error {}
class Forbidden extends Error {}

// ---------------------------------------------------------------- fetching

class NotFound extends Error {}

function authHeaders(accept) {
  const headers = { Accept: accept };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  return headers;
}

async function getJson(path) {
  let response;
  try {
    response = await fetch(path, { headers: authHeaders("application/json"), cache: "no-store" });
  } catch {
    throw new Error("service unreachable");
  }
  if (response.status === 401) throw new AuthNeeded();
  if (response.status === 403) throw new Forbidden();
  if (response.status === 404) throw new NotFound("HTTP 404");
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return response.json();
}

const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));
const tableHref = (tableId) => `#/tables/${encodeURIComponent(tableId)}`;
const tableLink = (tableId) => el("a", { href: tableHref(tableId) }, tableId);

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
      el("td", { "data-testid": "table-id" }, tableLink(t.tableId)),
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
      el("td", {}, tableLink(c.tableId)),
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

// ---------------------------------------------------------------- the live feed

/** The stream's state: the last cursor received (what a reconnect sends as Last-Event-ID). */
const feed = { cursor: null, running: false, retryMs: 1000 };
/** The latest changes, newest first: events, and before the first one the history's latest commits. */
const latest = [];
const seen = new Set();
/** Commits whose phase timings are still to fetch, by table. */
const untimed = new Map();
let timingsTimer = null;

// The history's record of a change, as the feed would name its kind (actions with no event left out).
const ACTION_KINDS = {
  expire: "expire",
  rollback: "rollback",
  "create-tag": "tag-create",
  "delete-tag": "tag-delete",
  "alter-table": "schema-change",
  "set-options": "schema-change",
};

/** What one change is known by in both the history and the feed: a change seen twice shows once. */
function changeKey(tableId, kind, user, ident, snapshots) {
  return [tableId, kind, user ?? "", ident ?? "", snapshots.join(",")].join("|");
}

function setLive(text, state) {
  const live = document.getElementById("live");
  live.textContent = text;
  live.dataset.state = state;
}

/** The page's first look: the feed's head, then the history's latest commits, then the stream after
 * the head. A commit recorded between the two reads is in both and shows once (changeKey). */
async function startFeed() {
  if (feed.running) return;
  feed.running = true;
  try {
    if (feed.cursor === null) {
      const head = await getJson("/events/head");
      const commits = await getJson("/commits?limit=20");
      seedLatest(commits.recent);
      feed.cursor = head.cursor;
    }
    await follow();
  } catch (error) {
    if (error instanceof AuthNeeded) askForToken();
    else setLive(`feed unavailable (${error.message})`, "down");
  } finally {
    feed.running = false;
  }
}

function seedLatest(records) {
  for (const r of [...records].reverse()) {
    if (r.outcome !== "committed" && r.outcome !== "done") continue;
    const kind = r.action === "commit" ? (r.transaction ? "transaction" : "commit") : ACTION_KINDS[r.action];
    if (!kind) continue;
    const tables = r.transaction ? r.transaction.map((t) => [t.table, t.snapshots]) : [[r.tableId, r.snapshots]];
    for (const [tableId, snapshots] of tables) {
      const ids = (snapshots ?? []).map((s) => s.id);
      addLatest({
        key: changeKey(tableId, kind, r.commitUser, r.identifier, ids),
        tableId, kind, user: r.commitUser, ident: r.identifier, snapshots: ids, at: r.createdAt,
        timings: r.action === "commit" ? r.timings : null, partitions: null,
      });
    }
  }
  renderLatest();
}

function addLatest(row) {
  if (seen.has(row.key)) return false;
  seen.add(row.key);
  latest.unshift(row);
  while (latest.length > LIVE_ROWS) seen.delete(latest.pop().key);
  return true;
}

/** Reads the stream for ever: after a drop (a restarted server, a lost network) it reconnects and
 * resumes after the last cursor it received, so no change is missed or shown twice. */
async function follow() {
  for (;;) {
    const headers = authHeaders("text/event-stream");
    headers["Last-Event-ID"] = String(feed.cursor);
    const watchdog = new AbortController();
    try {
      const response = await fetch("/events/stream", { headers, cache: "no-store", signal: watchdog.signal });
      if (response.status === 401) throw new AuthNeeded();
      if (response.status === 410) {
        // Retention deleted what this page had not read (it was closed or offline for days): go on from now.
        feed.cursor = (await getJson("/events/head")).cursor;
        continue;
      }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      setLive("live", "live");
      feed.retryMs = 1000;
      await readStream(response.body, watchdog, onMessage);
    } catch (error) {
      if (error instanceof AuthNeeded) throw error;
    }
    setLive("reconnecting…", "down");
    await sleep(feed.retryMs);
    feed.retryMs = Math.min(feed.retryMs * 2, 5000);
  }
}

/** Server-sent events out of a fetch body: blocks separated by a blank line, `id:` and `data:` lines,
 * comments (the keepalives) starting with a colon. */
async function readStream(body, watchdog, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let silence = setTimeout(() => watchdog.abort(), STREAM_SILENCE_MS);
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      clearTimeout(silence);
      silence = setTimeout(() => watchdog.abort(), STREAM_SILENCE_MS);
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5));
        if (data.length) onEvent(JSON.parse(data.join("\n")));
      }
    }
  } finally {
    clearTimeout(silence);
  }
}

function onMessage(event) {
  feed.cursor = event.cursor;
  const row = {
    key: changeKey(event.tableId, event.kind, event.commitUser, event.commitIdentifier, event.snapshotIds),
    tableId: event.tableId, kind: event.kind, user: event.commitUser, ident: event.commitIdentifier,
    snapshots: event.snapshotIds, at: event.at, timings: null, partitions: event.partitions,
  };
  if (addLatest(row) && (event.kind === "commit" || event.kind === "transaction")) {
    if (!untimed.has(row.tableId)) untimed.set(row.tableId, []);
    untimed.get(row.tableId).push(row);
    // One history read per table for a burst of commits, not one per commit.
    timingsTimer ??= setTimeout(fetchTimings, 300);
  }
  renderLatest();
  const current = route();
  if (current.view === "overview" || (current.view === "table" && current.tableId === event.tableId)) soon();
}

/** The phase timings the feed does not carry, from each table's latest history. */
async function fetchTimings() {
  timingsTimer = null;
  const batch = [...untimed.entries()];
  untimed.clear();
  await Promise.allSettled(
    batch.map(async ([tableId, rows]) => {
      const history = await getJson(`/tables/${encodeURIComponent(tableId)}/commits?limit=${rows.length + 20}`);
      for (const row of rows) {
        const record = history.commits.find(
          (c) => c.commitUser === row.user && c.identifier === row.ident && c.outcome === "committed",
        );
        // A commit the history no longer lists among its latest: say so rather than wait for ever.
        row.timings = record ? record.timings : "unknown";
      }
    }),
  );
  renderLatest();
}

function timingCell(timings, testId) {
  if (!timings) return num("…", { "data-testid": testId, title: "not known yet" });
  if (timings === "unknown") return num("—", { "data-testid": testId, title: "not in the table's latest history" });
  const phases = Object.entries(timings)
    .filter(([phase]) => phase !== "total")
    .sort(([a], [b]) => phaseRank(a) - phaseRank(b))
    .map(([phase, value]) => `${phase} ${ms(value)}`)
    .join(" · ");
  const total = timings.total ?? Object.values(timings).reduce((sum, v) => sum + v, 0);
  return num(`${ms(total)} ms`, { "data-testid": testId, title: phases });
}

function partitionSummary(partitions) {
  if (!partitions || partitions.length === 0) return "";
  const sum = (field) => partitions.reduce((total, p) => total + p[field], 0);
  const files = `+${count(sum("addedFiles"))}/-${count(sum("removedFiles"))} files`;
  return `${count(partitions.length)} partition${partitions.length === 1 ? "" : "s"}, ${files}, +${count(sum("addedRows"))} rows`;
}

function renderLatest() {
  if (latest.length === 0) return panel("panel-latest", el("p", { class: "empty" }, "no change yet"));
  const rows = latest.map((r) =>
    el(
      "tr",
      { "data-testid": "live-row", "data-table-id": r.tableId, "data-kind": r.kind },
      el("td", {}, clock(r.at)),
      el("td", { "data-testid": "live-table" }, tableLink(r.tableId)),
      el("td", { "data-testid": "live-user" }, r.user ?? "—"),
      num(r.ident === null || r.ident === undefined ? "—" : identifier(r.ident), { "data-testid": "live-identifier" }),
      el("td", { class: "type", "data-testid": "live-kind" }, r.kind),
      num(r.snapshots.join(", ") || "—", { "data-testid": "live-snapshots" }),
      r.kind === "commit" || r.kind === "transaction" ? timingCell(r.timings, "live-total") : num("—"),
      el("td", { class: "message" }, partitionSummary(r.partitions)),
    ),
  );
  const columns = [["At"], ["Table"], ["Commit user"], ["Identifier", 1], ["Kind"], ["Snapshots", 1],
    ["Took", 1], ["Changed"]];
  panel("panel-latest", grid(columns, rows));
}

// ---------------------------------------------------------------- one table's page

/** The table page's history, kept to search it without asking the service again. */
const tableView = { tableId: null, commits: [], searched: false };

/** The history's query: the search is the service's (GET .../commits?user_prefix=&identifier=&outcome=),
 * so it reaches the whole history, not only the entries one page holds. */
function historyQuery() {
  const f = historyFilter();
  const params = new URLSearchParams({ limit: String(HISTORY_LIMIT) });
  if (f.user) params.set("user_prefix", f.user);
  if (f.ident) params.set("identifier", f.ident);
  if (f.outcome) params.set("outcome", f.outcome);
  return params.toString();
}

async function refreshTable(tableId) {
  const base = `/tables/${encodeURIComponent(tableId)}`;
  const search = historyFilter();
  const [table, history, snapshots, tags, consumers, locks] = await Promise.allSettled([
    getJson(base),
    // An identifier that is no number would be a 422: asked for only once it is one.
    search.badIdent ? Promise.resolve(null) : getJson(`${base}/commits?${historyQuery()}`),
    getJson(`${base}/snapshots?limit=20`),
    getJson(`${base}/tags`),
    getJson(`${base}/consumers`),
    getJson("/locks"),
  ]);
  const results = [table, history, snapshots, tags, consumers, locks];
  const errors = results.filter((r) => r.status === "rejected").map((r) => r.reason);
  if (errors.some((e) => e instanceof AuthNeeded)) throw new AuthNeeded();
  if (route().tableId !== tableId) return errors; // the user moved on while this was read

  document.getElementById("table-title").textContent = tableId;
  if (table.status === "fulfilled") renderTableSummary(table.value);
  else unavailable("panel-table", table.reason);
  if (history.status === "fulfilled") {
    tableView.tableId = tableId;
    tableView.commits = history.value ? history.value.commits : [];
    tableView.searched = Boolean(search.user || search.ident || search.outcome || search.badIdent);
    renderHistory(search.badIdent);
    // The conflicts panel lists the table's latest conflicts whatever the search.
    if (!tableView.searched) renderTableConflicts(tableView.commits);
    else {
      try {
        renderTableConflicts((await getJson(`${base}/commits?limit=100&outcome=rejected`)).commits);
      } catch (error) {
        if (error instanceof AuthNeeded) throw error;
        unavailable("panel-table-conflicts", error);
      }
    }
  } else {
    unavailable("panel-history", history.reason);
    unavailable("panel-table-conflicts", history.reason);
  }
  if (snapshots.status === "fulfilled") renderSnapshots(snapshots.value.snapshots);
  else unavailable("panel-snapshots", snapshots.reason);
  if (tags.status === "fulfilled") renderTags(tags.value.tags);
  else unavailable("panel-tags", tags.reason);
  if (consumers.status === "fulfilled") renderTableConsumers(consumers.value.consumers);
  else unavailable("panel-table-consumers", consumers.reason);
  if (locks.status === "fulfilled") renderTableLock(tableId, locks.value);
  else unavailable("panel-table-lock", locks.reason);
  return errors;
}

function renderTableSummary(t) {
  const row = (label, value, testId) => el("tr", {}, el("td", {}, label), num(value, { "data-testid": testId }));
  panel(
    "panel-table",
    el(
      "table",
      { class: "summary" },
      el(
        "tbody",
        {},
        row("Latest snapshot", t.latestSnapshotId ?? "—", "summary-snapshot"),
        row("Records", known(t.totalRecordCount, count), "summary-records"),
        row("Live files", known(t.fileCount, count), "summary-files"),
        row("Size", known(t.fileBytes, bytes), "summary-bytes"),
        el("tr", {}, el("td", {}, "Location"), el("td", { class: "message" }, t.location)),
      ),
    ),
  );
}

function historyFilter() {
  const ident = document.getElementById("history-identifier").value.trim();
  const whole = /^-?\d{1,19}$/.test(ident);
  return {
    user: document.getElementById("history-user").value.trim(),
    ident: whole ? ident : "",
    badIdent: ident !== "" && !whole,
    outcome: document.getElementById("history-outcome").value,
  };
}

function renderHistory(badIdent) {
  const shown = tableView.commits;
  const capped = shown.length === HISTORY_LIMIT ? ` (the latest ${count(HISTORY_LIMIT)})` : "";
  const what = tableView.searched ? "matching" : "recorded";
  document.getElementById("history-count").textContent = `${count(shown.length)} ${what}${capped}`;
  if (badIdent) {
    return panel("panel-history", el("p", { class: "unavailable", "data-testid": "history-empty" }, "an identifier is a whole number"));
  }
  if (shown.length === 0) {
    const empty = tableView.searched ? "nothing matches" : "nothing recorded yet";
    return panel("panel-history", el("p", { class: "empty", "data-testid": "history-empty" }, empty));
  }
  const rows = shown.map((c) =>
    el(
      "tr",
      { "data-testid": "history-row", "data-outcome": c.outcome },
      el("td", {}, clock(c.createdAt)),
      el("td", { "data-testid": "history-user" }, c.commitUser),
      num(identifier(c.identifier), { "data-testid": "history-identifier" }),
      el("td", { class: "type" }, c.action),
      el("td", { class: `type ${c.outcome === "rejected" ? "rejected" : "committed"}`, "data-testid": "history-outcome" }, c.outcome),
      num(c.snapshots.map((s) => s.id).join(", ") || "—", { "data-testid": "history-snapshots" }),
      c.action === "commit" ? timingCell(c.timings, "history-total") : num("—"),
      el(
        "td",
        { class: "message", "data-testid": "history-phases" },
        Object.entries(c.timings)
          .filter(([phase]) => phase !== "total")
          .sort(([a], [b]) => phaseRank(a) - phaseRank(b))
          .map(([phase, value]) => `${phase} ${ms(value)}`)
          .join(" · "),
      ),
      el("td", { class: "message rejected", "data-testid": "history-conflict" }, c.conflict ? `${c.conflict.type}: ${c.conflict.message}` : ""),
    ),
  );
  const columns = [["At"], ["Commit user"], ["Identifier", 1], ["Action"], ["Outcome"], ["Snapshots", 1],
    ["Took", 1], ["Phases (ms)"], ["Conflict"]];
  panel("panel-history", grid(columns, rows));
}

function renderTableConflicts(commits) {
  const rejected = commits.filter((c) => c.conflict);
  if (rejected.length === 0) return panel("panel-table-conflicts", el("p", { class: "empty" }, "no conflicts"));
  const rows = rejected.map((c) =>
    el(
      "tr",
      { "data-testid": "table-conflict-row" },
      el("td", {}, clock(c.createdAt)),
      el("td", {}, c.commitUser),
      el("td", { class: "type rejected", "data-testid": "table-conflict-type" }, c.conflict.type),
      el("td", { class: "message", "data-testid": "table-conflict-message" }, c.conflict.message),
    ),
  );
  panel("panel-table-conflicts", grid([["At"], ["Commit user"], ["Type"], ["Reason"]], rows));
}

function renderSnapshots(snapshots) {
  if (snapshots.length === 0) return panel("panel-snapshots", el("p", { class: "empty" }, "no snapshot yet"));
  const rows = snapshots.map((s) =>
    el(
      "tr",
      { "data-testid": "snapshot-row", "data-snapshot-id": s.id },
      num(s.id),
      el("td", { class: "type" }, s.commitKind),
      el("td", { "data-testid": "snapshot-user" }, s.commitUser),
      num(identifier(s.commitIdentifier)),
      el("td", {}, clock(s.timeMillis / 1000)),
      num(count(s.totalRecordCount), { "data-testid": "snapshot-records" }),
      num(count(s.deltaRecordCount)),
    ),
  );
  const columns = [["Id", 1], ["Kind"], ["Commit user"], ["Identifier", 1], ["At"], ["Records", 1], ["Delta", 1]];
  panel("panel-snapshots", grid(columns, rows));
}

function renderTags(tags) {
  if (tags.length === 0) return panel("panel-tags", el("p", { class: "empty" }, "no tags"));
  const rows = tags.map((t) =>
    el(
      "tr",
      { "data-testid": "tag-row", "data-tag": t.name },
      el("td", { "data-testid": "tag-name" }, t.name),
      num(t.snapshotId, { "data-testid": "tag-snapshot" }),
      num(known(t.recordCount, count)),
    ),
  );
  panel("panel-tags", grid([["Tag"], ["Snapshot", 1], ["Records", 1]], rows));
}

function renderTableConsumers(consumers) {
  if (consumers.length === 0) return panel("panel-table-consumers", el("p", { class: "empty" }, "no consumers"));
  const now = Date.now() / 1000;
  const rows = consumers.map((c) =>
    el(
      "tr",
      { "data-testid": "table-consumer-row" },
      el("td", {}, c.consumerId),
      num(c.nextSnapshotId, { "data-testid": "table-consumer-next" }),
      num(`${duration(now - c.modifiedAt)} ago`),
    ),
  );
  panel("panel-table-consumers", grid([["Consumer"], ["Next snapshot", 1], ["Updated", 1]], rows));
}

function renderTableLock(tableId, response) {
  const lock = response.locks.find((l) => l.tableId === tableId);
  if (!lock) return panel("panel-table-lock", el("p", { class: "empty", "data-testid": "table-unlocked" }, "not locked"));
  const row = (label, value, testId) => el("tr", {}, el("td", {}, label), num(value, { "data-testid": testId }));
  const waiting = lock.waiters.map((w) => `${w.commitUser} #${identifier(w.identifier)}`).join(", ");
  panel(
    "panel-table-lock",
    el(
      "table",
      { "data-testid": "table-lock" },
      el(
        "tbody",
        {},
        row("Held by", lock.owner, "table-lock-owner"),
        row("Epoch", lock.epoch, "table-lock-epoch"),
        row("Held for", duration(response.now - lock.acquiredAt), "table-lock-age"),
        row("Expires in", duration(lock.expiresAt - response.now), "table-lock-expires"),
        row("Waiting", waiting || "none", "table-lock-waiting"),
      ),
    ),
  );
}

let searchTimer = null;
for (const id of ["history-user", "history-identifier", "history-outcome"]) {
  // One query once the typing pauses, not one per key.
  document.getElementById(id).addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(tick, 250);
  });
}
document.getElementById("history-search").addEventListener("submit", (event) => event.preventDefault());

// ---------------------------------------------------------------- the ops page

async function refreshOps() {
  const [consumers, publishers] = await Promise.allSettled([getJson("/ops/consumers"), getJson("/ops/publishers")]);
  const errors = [consumers, publishers].filter((r) => r.status === "rejected").map((r) => r.reason);
  if (errors.some((e) => e instanceof AuthNeeded)) throw new AuthNeeded();
  // The consumers' lags count every table's events; the publishers' state is the admins'.
  if (consumers.status === "fulfilled") renderFeedConsumers(consumers.value);
  else opsUnavailable("panel-feed-consumers", consumers.reason, "shown to tokens that may read every table");
  if (publishers.status === "fulfilled") renderPublishers(publishers.value.publishers ?? []);
  else if (publishers.reason instanceof NotFound) renderPublishers([]); // a service without publishers
  else opsUnavailable("panel-publishers", publishers.reason, "shown to admins");
  // A 404 is a service without publishers, a 403 a token that may not see lags: both said in their panel.
  return errors.filter((e) => !(e instanceof NotFound) && !(e instanceof Forbidden));
}

function opsUnavailable(testId, error, whom) {
  if (!(error instanceof Forbidden)) return unavailable(testId, error);
  panel(testId, el("p", { class: "empty", "data-testid": "unavailable" }, whom));
}

function renderFeedConsumers(response) {
  if (response.consumers.length === 0) {
    return panel(
      "panel-feed-consumers",
      el("p", { class: "empty", "data-testid": "no-consumers" }, "no named consumers yet (GET /events?consumer=<name>)"),
    );
  }
  const rows = response.consumers.map((c) => {
    const filter = [c.table && `table ${c.table}`, c.database && `database ${c.database}`, c.kind && `kind ${c.kind}`]
      .filter(Boolean)
      .join(", ");
    return el(
      "tr",
      { "data-testid": "feed-consumer-row", "data-name": c.name },
      el("td", { "data-testid": "feed-consumer-name" }, c.name),
      el("td", { class: "message" }, filter || "everything"),
      num(c.cursor, { "data-testid": "feed-consumer-cursor" }),
      num(count(c.lagEvents), { class: c.lagEvents ? "num rejected" : "num committed", "data-testid": "feed-consumer-lag" }),
      num(c.lagEvents ? duration(c.lagSeconds) : "—", { "data-testid": "feed-consumer-lag-seconds" }),
      num(`${duration(response.now - c.lastSeenAt)} ago`, { "data-testid": "feed-consumer-seen" }),
    );
  });
  const columns = [["Consumer"], ["Reads"], ["Cursor", 1], ["Lag (events)", 1], ["Oldest waiting", 1], ["Last read", 1]];
  panel("panel-feed-consumers", grid(columns, rows));
}

function renderPublishers(publishers) {
  if (publishers.length === 0) {
    return panel("panel-publishers", el("p", { class: "empty", "data-testid": "no-publishers" }, "no publishers"));
  }
  const rows = publishers.map((p) =>
    el(
      "tr",
      { "data-testid": "publisher-row", "data-name": p.name },
      el("td", { "data-testid": "publisher-name" }, p.name),
      el("td", { class: "type", "data-testid": "publisher-kind" }, p.kind),
      el("td", { class: "message" }, p.target),
      num(p.cursor, { "data-testid": "publisher-cursor" }),
      num(count(p.lagEvents), { class: p.lagEvents ? "num rejected" : "num committed", "data-testid": "publisher-lag" }),
      num(p.lagEvents ? known(p.lagSeconds, duration) : "—", { "data-testid": "publisher-lag-seconds" }),
      num(count(p.delivered), { "data-testid": "publisher-delivered" }),
      num(count(p.failures), { class: p.failures ? "num rejected" : "num", "data-testid": "publisher-failures" }),
      num(count(p.deadLetters), { class: p.deadLetters ? "num rejected" : "num", "data-testid": "publisher-dead-letters" }),
      el("td", { class: "message rejected", "data-testid": "publisher-error" }, p.lastError ?? ""),
    ),
  );
  const columns = [["Publisher"], ["Kind"], ["Target"], ["Cursor", 1], ["Lag (events)", 1], ["Oldest waiting", 1],
    ["Delivered", 1], ["Failures", 1], ["Dead letters", 1], ["Last error"]];
  panel("panel-publishers", grid(columns, rows));
}

// ---------------------------------------------------------------- access control

const authForm = document.getElementById("auth");
const forbidden = document.getElementById("forbidden");

function askForToken() {
  const had = sessionStorage.getItem(TOKEN_KEY);
  document.getElementById("auth-error").textContent = had ? "the service refused that token" : "";
  authForm.hidden = false;
  document.getElementById("updated").textContent = "token needed";
  setLive("token needed", "down");
}

authForm.addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
  document.getElementById("token").value = "";
  authForm.hidden = true;
  tick();
  startFeed();
});

document.getElementById("forget").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  forbidden.hidden = true;
  askForToken();
});

// ---------------------------------------------------------------- routes and refreshing

const windowSelect = document.getElementById("window");

/** The view the address names: #/tables/<id>, #/ops, else the overview. */
function route() {
  const hash = location.hash;
  if (hash.startsWith("#/tables/")) return { view: "table", tableId: decodeURIComponent(hash.slice(9)) };
  if (hash === "#/ops") return { view: "ops" };
  return { view: "overview" };
}

function showView(current) {
  for (const view of ["overview", "table", "ops"]) {
    document.getElementById(`view-${view}`).hidden = view !== current.view;
  }
  if (current.view === "table" && tableView.tableId !== current.tableId) {
    tableView.tableId = null;
    tableView.commits = [];
    for (const id of ["history-user", "history-identifier"]) document.getElementById(id).value = "";
    document.getElementById("history-outcome").value = "";
    document.getElementById("table-title").textContent = current.tableId;
    for (const testId of ["panel-table", "panel-history", "panel-table-lock", "panel-table-conflicts",
      "panel-snapshots", "panel-tags", "panel-table-consumers"]) {
      panel(testId, el("p", { class: "empty" }, "loading…"));
    }
  }
}

/** The overview's state panels (the latest changes come from the feed, not from here). */
async function refreshOverview() {
  const [overview, locks, inFlight] = await Promise.allSettled([
    getJson(`/ops/overview?minutes=${windowSelect.value}&${tableQuery()}`),
    getJson("/locks"),
    // Commits in flight are not in the feed (it has them once committed); limit=1 keeps the rest small.
    getJson("/commits?limit=1"),
  ]);
  const errors = [overview, locks, inFlight].filter((r) => r.status === "rejected").map((r) => r.reason);
  if (errors.some((e) => e instanceof AuthNeeded)) throw new AuthNeeded();

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
  if (inFlight.status === "fulfilled") renderInFlight(inFlight.value);
  else unavailable("panel-inflight", inFlight.reason);
  return errors;
}

/** One refresh of the view on screen; false when refreshing must wait for a token. */
async function refresh() {
  const current = route();
  let errors;
  try {
    if (current.view === "table") errors = await refreshTable(current.tableId);
    else if (current.view === "ops") errors = await refreshOps();
    else errors = await refreshOverview();
  } catch (error) {
    if (!(error instanceof AuthNeeded)) throw error;
    askForToken();
    return false;
  }
  forbidden.hidden = !errors.some((e) => e instanceof Forbidden);
  const updated = document.getElementById("updated");
  updated.textContent = `updated ${clock(Date.now() / 1000)}`;
  updated.classList.toggle("stale", errors.length > 0);
  return true;
}

let timer = null;
let busy = false;
let rerun = false; // asked for while a refresh was in flight (a search typed): run again right after
let soonTimer = null;

/** A refresh shortly after an event, at most one a second however many events come. */
function soon() {
  soonTimer ??= setTimeout(() => {
    soonTimer = null;
    tick();
  }, 1000);
}

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
    console.error("dashboard refresh failed", error); // a rendering bug must not stop the refreshing
  } finally {
    busy = false;
  }
  const quick = rerun;
  rerun = false;
  const every = route().view === "ops" ? OPS_REFRESH_MS : STATE_REFRESH_MS;
  if (again) timer = setTimeout(tick, quick ? 0 : every);
}

window.addEventListener("hashchange", () => {
  showView(route());
  tick();
});
windowSelect.addEventListener("change", tick);
showView(route());
tick();
startFeed();
