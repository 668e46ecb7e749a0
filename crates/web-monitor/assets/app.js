// lionrt serve: the pages' one script. Plain DOM, no framework; data is
// only ever put into the page as text (never as markup).
"use strict";

const params = new URLSearchParams(location.search);
const NOLIVE = params.get("nolive") === "1";
let META = null;

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

async function api(path, opts) {
  const r = await fetch(path, Object.assign({ credentials: "same-origin" }, opts || {}));
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function when(us) {
  if (us === null || us === undefined) return "-";
  return new Date(us / 1000).toISOString().replace("T", " ").slice(0, 19) + "Z";
}

function ago(us) {
  if (!us) return "-";
  const s = Math.max(0, Math.round((Date.now() * 1000 - us) / 1e6));
  if (s < 90) return s + "s";
  if (s < 5400) return Math.round(s / 60) + "m";
  if (s < 172800) return Math.round(s / 3600) + "h";
  return Math.round(s / 86400) + "d";
}

function cost(usd, priced) {
  if (!priced || usd === null || usd === undefined) return el("span", { class: "unpriced" }, "unpriced");
  return "$" + Number(usd).toFixed(4);
}

function status(s) {
  return el("span", { class: "status status-" + s }, s);
}

function main(...kids) {
  const m = document.getElementById("main");
  m.replaceChildren(...kids);
}

function fail(e) {
  main(el("p", { class: "error" }, "Error: " + e.message));
}

// One live stream per page: the server's change feed, resumed by the
// browser with Last-Event-ID after a drop.
function live(query, cursor, handlers) {
  if (NOLIVE || !window.EventSource) return null;
  const q = new URLSearchParams(query);
  if (cursor) q.set("after", cursor);
  const es = new EventSource("/api/events?" + q.toString());
  const badge = document.getElementById("live");
  es.onopen = () => { badge.textContent = "live"; badge.className = "live on"; };
  es.onerror = () => { badge.textContent = "reconnecting"; badge.className = "live off"; };
  for (const [kind, fn] of Object.entries(handlers)) {
    es.addEventListener(kind, (ev) => fn(JSON.parse(ev.data), ev.lastEventId));
  }
  return es;
}

function debounce(fn, ms) {
  let t = null;
  return () => { clearTimeout(t); t = setTimeout(fn, ms); };
}

// ---- fleet ----------------------------------------------------------

const GROUPS = [
  ["needs_attention", "Needs attention"],
  ["working", "Working"],
  ["done", "Done"],
  ["failed", "Failed"],
];

async function fleet() {
  const state = {
    status: params.get("status") || "",
    provider: params.get("provider") || "",
    group: params.get("group") || "",
    q: params.get("q") || "",
  };
  let rows = [];
  let next = null;
  let cursor = null;
  const chips = el("div", { class: "filters", id: "groups" });
  const statusSel = el("select", { id: "f-status", "aria-label": "status" });
  const providerSel = el("select", { id: "f-provider", "aria-label": "provider" });
  const search = el("input", { id: "f-q", type: "search", placeholder: "search id, model, cwd, reason", value: state.q });
  const body = el("tbody", { id: "sessions" });
  const more = el("button", { id: "more", onclick: () => load(true) }, "Load more");
  const apply = () => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(state)) if (v) q.set(k, v);
    if (NOLIVE) q.set("nolive", "1");
    history.replaceState(null, "", "/?" + q.toString());
    load(false);
  };
  statusSel.addEventListener("change", () => { state.status = statusSel.value; apply(); });
  providerSel.addEventListener("change", () => { state.provider = providerSel.value; apply(); });
  search.addEventListener("input", debounce(() => { state.q = search.value; apply(); }, 250));

  function draw(data) {
    chips.replaceChildren(
      el("a", { class: "chip" + (state.group ? "" : " here"), href: "#", onclick: (e) => { e.preventDefault(); state.group = ""; apply(); } }, "All"),
      ...GROUPS.map(([g, label]) => el("a", {
        class: "chip" + (state.group === g ? " here" : ""), href: "#", "data-group": g,
        onclick: (e) => { e.preventDefault(); state.group = g; apply(); },
      }, label + " ", el("b", { class: "count" }, String(data.groups[g] || 0)))),
    );
    statusSel.replaceChildren(el("option", { value: "" }, "any status"),
      ...data.statuses.map((s) => el("option", { value: s, selected: s === state.status }, s)));
    providerSel.replaceChildren(el("option", { value: "" }, "any provider"),
      ...data.providers.map((p) => el("option", { value: p.provider, selected: p.provider === state.provider }, (p.provider || "(none)") + " (" + p.sessions + ")")));
    const trs = [];
    for (const [g, label] of GROUPS) {
      const mine = rows.filter((r) => r.group === g);
      if (!mine.length) continue;
      trs.push(el("tr", { class: "group" }, el("td", { colspan: 9 }, label + " (" + mine.length + ")")));
      for (const r of mine) {
        trs.push(el("tr", { class: "session", "data-id": r.id },
          el("td", {}, el("a", { href: "/session/" + encodeURIComponent(r.id) }, r.id)),
          el("td", {}, status(r.status), g === "needs_attention" ? el("span", { class: "attention" }, " quiet " + ago(r.last_message_at || r.updated_at)) : null),
          el("td", {}, r.provider || "-"),
          el("td", {}, r.model || "-"),
          el("td", { class: "num" }, ago(r.created_at)),
          el("td", { class: "num" }, String(r.messages)),
          el("td", { class: "num" }, r.input_tokens === null && r.output_tokens === null ? "-" : (r.input_tokens || 0) + "/" + (r.output_tokens || 0)),
          el("td", { class: "num" }, cost(r.total_cost_usd, r.priced)),
          el("td", { class: "muted" }, r.reason_code || ""),
        ));
      }
    }
    if (!trs.length) trs.push(el("tr", {}, el("td", { colspan: 9, class: "muted" }, "No sessions match.")));
    body.replaceChildren(...trs);
    more.hidden = !next;
  }

  async function load(append) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(state)) if (v) q.set(k, v);
    if (append && next) q.set("before", next);
    try {
      const data = await api("/api/sessions?" + q.toString());
      rows = append ? rows.concat(data.items) : data.items;
      next = data.next;
      cursor = cursor || data.cursor;
      draw(data);
      return data;
    } catch (e) { fail(e); }
  }

  main(
    el("h1", {}, "Fleet"),
    chips,
    el("div", { class: "filters" }, statusSel, providerSel, search),
    el("table", {}, el("thead", {}, el("tr", {},
      el("th", {}, "Session"), el("th", {}, "Status"), el("th", {}, "Provider"), el("th", {}, "Model"),
      el("th", { class: "num" }, "Age"), el("th", { class: "num" }, "Msgs"), el("th", { class: "num" }, "Tokens in/out"),
      el("th", { class: "num" }, "Cost"), el("th", {}, "Reason"))), body),
    more,
  );
  const first = await load(false);
  const refresh = debounce(() => load(false), 300);
  if (first) live({}, first.cursor, { transition: refresh, message: refresh });
}

// ---- session --------------------------------------------------------

function describe(content) {
  if (typeof content === "string") return content;
  if (content && typeof content === "object") {
    if (typeof content.text === "string") return content.text;
    if (typeof content.content === "string") return content.content;
  }
  return JSON.stringify(content);
}

async function session() {
  const id = decodeURIComponent(location.pathname.replace(/^\/session\//, ""));
  let data;
  try { data = await api("/api/sessions/" + encodeURIComponent(id)); } catch (e) { return fail(e); }
  const s = data.session;
  const seenT = new Set();
  let lastSeq = 0;
  const head = el("div", { id: "head" });
  const timeline = el("tbody", { id: "timeline" });
  const msgs = el("div", { class: "messages", id: "messages" });
  const note = el("p", { id: "action-result" });

  function drawHead(row) {
    const killable = META && META.actions && row.status === "running";
    head.replaceChildren(
      el("h1", {}, "Session ", el("code", {}, row.id), " ", status(row.status)),
      el("p", {}, row.reason_code ? "reason " + row.reason_code + (row.reason_summary ? " — " + row.reason_summary : "") : "",
        killable ? el("button", { class: "danger", id: "kill", onclick: kill }, "Kill") : null),
    );
  }

  async function kill() {
    if (!confirm("End this session's leg?")) return;
    try {
      const r = await api("/api/sessions/" + encodeURIComponent(id) + "/kill", {
        method: "POST", headers: { "X-CSRF-Token": META.csrf },
      });
      note.textContent = "killed: " + r.status;
    } catch (e) { note.textContent = "refused: " + e.message; note.className = "error"; }
  }

  function addTransition(t) {
    if (seenT.has(t.id)) return;
    seenT.add(t.id);
    timeline.append(el("tr", { "data-transition": t.id },
      el("td", {}, when(t.created_at)),
      el("td", {}, t.from_status || "(created)", " → ", status(t.to_status)),
      el("td", {}, t.reason_code, t.reason_summary ? el("div", { class: "muted" }, t.reason_summary) : null),
      el("td", {}, t.actor_type + ":" + t.actor_id, t.overridden ? el("b", {}, " (override)") : null),
    ));
  }

  function addMessage(m, pushed) {
    if (m.seq <= lastSeq) return;
    lastSeq = m.seq;
    msgs.append(el("div", { class: "msg", "data-seq": m.seq, "data-live": pushed ? "1" : null },
      el("span", { class: "role" }, m.role), el("span", { class: "muted" }, when(m.created_at)),
      el("pre", {}, describe(m.content))));
  }

  const u = data.usage;
  const sp = data.spawn;
  drawHead(s);
  for (const t of data.timeline) addTransition(t);
  main(
    head, note,
    el("div", { class: "cols" },
      el("div", {}, el("h2", {}, "Usage and cost"), el("dl", { class: "facts", id: "usage" },
        el("dt", {}, "tokens in"), el("dd", {}, u.input_tokens ?? "-"),
        el("dt", {}, "tokens out"), el("dd", {}, u.output_tokens ?? "-"),
        el("dt", {}, "cost"), el("dd", { id: "cost" }, cost(u.total_cost_usd, u.priced)),
        el("dt", {}, "turns"), el("dd", {}, u.num_turns ?? "-"),
        el("dt", {}, "duration"), el("dd", {}, u.duration_ms === null ? "-" : u.duration_ms + " ms"))),
      el("div", {}, el("h2", {}, "Spawn record"), el("dl", { class: "facts" },
        el("dt", {}, "provider / model"), el("dd", {}, (s.provider || "-") + " / " + (s.model || "-")),
        el("dt", {}, "kind"), el("dd", {}, s.kind || "-"),
        el("dt", {}, "cwd"), el("dd", {}, s.cwd || "-"),
        el("dt", {}, "leg pid / pgid"), el("dd", {}, (sp.leg_pid ?? "-") + " / " + (sp.leg_pgid ?? "-")),
        el("dt", {}, "owner pid / host"), el("dd", {}, (sp.owner_pid ?? "-") + " / " + (sp.owner_host_id || "-")),
        el("dt", {}, "created / ended"), el("dd", {}, when(s.created_at) + " / " + when(s.ended_at))))),
    el("h2", {}, "Lifecycle"),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "When"), el("th", {}, "Change"), el("th", {}, "Why"), el("th", {}, "Who"))), timeline),
    el("h2", {}, "Messages"), msgs,
  );
  // Every page of messages, then live.
  let after = 0;
  for (;;) {
    let page;
    try { page = await api("/api/sessions/" + encodeURIComponent(id) + "/messages?limit=200&after=" + after); } catch (e) { return fail(e); }
    for (const m of page.items) addMessage(m);
    if (!page.next) break;
    after = page.next;
  }
  // ?until=end: stop listening once the session ends (a follow, like
  // `lionrt sessions messages --follow`).
  const untilEnd = params.get("until") === "end";
  const es = live({ session: id }, data.cursor, {
    message: (m) => addMessage(m, true),
    transition: (t) => {
      addTransition(t);
      drawHead(Object.assign(s, { status: t.to_status, reason_code: t.reason_code, reason_summary: t.reason_summary }));
      if (untilEnd && t.to_status !== "running" && es) {
        es.close();
        document.getElementById("live").textContent = "ended";
      }
    },
  });
  if (untilEnd && es && s.status !== "running") es.close();
}

// ---- schedules, outbox, audit ----------------------------------------

async function admin() {
  const sched = el("tbody", { id: "schedules" });
  const runs = el("tbody", { id: "runs" });
  const outbox = el("tbody", { id: "outbox" });
  const counts = el("p", { id: "outbox-counts", class: "muted" });
  const audit = el("tbody", { id: "audit" });
  const kind = el("input", { id: "f-kind", type: "search", placeholder: "kind prefix, e.g. mcp.", value: params.get("kind") || "" });
  const empty = (n, text) => el("tr", {}, el("td", { colspan: n, class: "muted" }, text));

  async function load() {
    try {
      const [s, o, a] = await Promise.all([
        api("/api/schedules"), api("/api/outbox"),
        api("/api/admin-events?" + new URLSearchParams(kind.value ? { kind: kind.value } : {}).toString()),
      ]);
      sched.replaceChildren(...(s.items.length ? s.items.map((r) => el("tr", {},
        el("td", {}, r.name || r.id), el("td", {}, status(r.status)), el("td", {}, when(r.next_fire_at)), el("td", {}, when(r.last_fire_at)))) : [empty(4, "No schedules.")]));
      runs.replaceChildren(...(s.recent_runs.length ? s.recent_runs.map((r) => el("tr", {},
        el("td", {}, r.id), el("td", {}, r.schedule_id || "-"), el("td", {}, status(r.status)), el("td", {}, r.reason_code || ""),
        el("td", {}, r.session_id ? el("a", { href: "/session/" + encodeURIComponent(r.session_id) }, r.session_id) : "-"), el("td", {}, when(r.created_at)))) : [empty(6, "No runs.")]));
      counts.textContent = Object.entries(o.counts).map(([k, v]) => k + ": " + v).join(" · ") || "empty";
      const retry = (r) => async (e) => {
        try {
          await api("/api/outbox/" + encodeURIComponent(r.id) + "/retry", { method: "POST", headers: { "X-CSRF-Token": META.csrf } });
          load();
        } catch (err) { e.target.replaceWith(el("span", { class: "error" }, "refused: " + err.message)); }
      };
      const revivable = (r) => META.actions && (r.status === "dead_letter" || r.status === "expired");
      outbox.replaceChildren(...(o.items.length ? o.items.map((r) => el("tr", { "data-dispatch": r.id },
        el("td", {}, r.id), el("td", {}, status(r.status),
          revivable(r) ? el("button", { class: "danger", "data-retry": r.id, onclick: retry(r) }, "Retry") : null), el("td", { class: "num" }, r.attempt + "/" + r.max_attempts),
        el("td", {}, when(r.next_attempt_at)), el("td", { class: "muted" }, r.last_error || ""), el("td", {}, when(r.updated_at)))) : [empty(6, "The outbox is empty.")]));
      audit.replaceChildren(...(a.items.length ? a.items.map((r) => el("tr", { "data-admin": r.id },
        el("td", {}, when(r.created_at)), el("td", {}, r.kind), el("td", {}, (r.entity_type || "-") + " " + (r.entity_id || "")),
        el("td", {}, r.actor_type + ":" + r.actor_id), el("td", {}, el("pre", {}, JSON.stringify(r.detail))))) : [empty(5, "No admin events.")]));
      return a;
    } catch (e) { fail(e); }
  }
  kind.addEventListener("input", debounce(load, 250));
  main(
    el("h1", {}, "Schedules, outbox and audit"),
    el("h2", {}, "Schedules"),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Schedule"), el("th", {}, "Status"), el("th", {}, "Next fire"), el("th", {}, "Last fire"))), sched),
    el("h2", {}, "Recent schedule runs"),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Run"), el("th", {}, "Schedule"), el("th", {}, "Status"), el("th", {}, "Reason"), el("th", {}, "Session"), el("th", {}, "At"))), runs),
    el("h2", {}, "Outbox"), counts,
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Row"), el("th", {}, "Status"), el("th", { class: "num" }, "Attempts"), el("th", {}, "Next attempt"), el("th", {}, "Last error"), el("th", {}, "Changed"))), outbox),
    el("h2", {}, "Admin events (MCP audit, refusals, overrides)"),
    el("div", { class: "filters" }, kind),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "When"), el("th", {}, "Kind"), el("th", {}, "Entity"), el("th", {}, "Actor"), el("th", {}, "Detail"))), audit),
  );
  const first = await load();
  const refresh = debounce(load, 300);
  if (first) live({}, first.cursor, { admin: refresh, transition: refresh });
}

// ---- costs -----------------------------------------------------------

async function costs() {
  let window = params.get("window") === "7d" ? "7d" : "24h";
  const body = el("tbody", { id: "costs" });
  const total = el("p", { id: "total" });
  const tabs = el("div", { class: "filters" });
  async function load() {
    tabs.replaceChildren(...["24h", "7d"].map((w) => el("a", { class: "chip" + (w === window ? " here" : ""), href: "#",
      onclick: (e) => { e.preventDefault(); window = w; load(); } }, "last " + w)));
    try {
      const d = await api("/api/costs?window=" + window);
      total.replaceChildren("Priced spend: $" + d.total_cost_usd.toFixed(4) + " · ",
        el("span", { class: "unpriced" }, d.unpriced_sessions + " unpriced session(s)"), " (no cost reported: not counted as $0)");
      body.replaceChildren(...(d.rows.length ? d.rows.map((r) => el("tr", {},
        el("td", {}, r.provider || "(none)"), el("td", {}, r.model || "-"), el("td", { class: "num" }, String(r.sessions)),
        el("td", { class: "num" }, r.priced_sessions ? "$" + Number(r.cost_usd).toFixed(4) : el("span", { class: "unpriced" }, "unpriced")),
        el("td", { class: "num" }, String(r.unpriced_sessions)),
        el("td", { class: "num" }, (r.input_tokens ?? 0) + "/" + (r.output_tokens ?? 0)))) : [el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No sessions in the window."))]));
    } catch (e) { fail(e); }
  }
  main(el("h1", {}, "Costs"), tabs, total,
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Provider"), el("th", {}, "Model"), el("th", { class: "num" }, "Sessions"),
      el("th", { class: "num" }, "Cost (priced)"), el("th", { class: "num" }, "Unpriced"), el("th", { class: "num" }, "Tokens in/out"))), body));
  await load();
}

// ---- boot ------------------------------------------------------------

(async () => {
  const page = document.body.dataset.page;
  for (const a of document.querySelectorAll("nav a")) if (a.dataset.nav === page) a.className = "here";
  try {
    META = await api("/api/meta");
    document.getElementById("store").textContent = META.store + (META.read_only ? " · read-only" : "");
  } catch (e) { return fail(e); }
  const pages = { fleet, session, admin, costs };
  (pages[page] || fleet)().catch(fail);
})();
