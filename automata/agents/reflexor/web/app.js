// The Reflexor page: the conversation the user actor observes (its
// ContextOfUser, kept in step by the bridge's client), the brain's replies
// as they stream, tool calls with their status and results, where the
// history was compressed, and an input box. Served by a Fleet, the page is
// one person's: it asks the server for an identity of its own with the
// operator's token it was opened with, keeps it (localStorage), and lists
// that person's conversations on the side. Every URL it asks for is
// relative to its own, so that it works under any prefix (/, /support/).
import { connect } from "./agent/client.js";

const params = new URLSearchParams(location.search);
const $ = (id) => document.getElementById(id);
const conversation = $("conversation");
const status = $("status");
let agent = null; // the conversation shown
let streams = new Map(); // message id -> {text, stop}

function setStatus(text, cls) {
  status.textContent = text;
  status.className = `status ${cls}`;
}

// The connection indicator: connected once a state arrives and while the
// state stream is open; reconnecting whenever the client has had to
// reconnect since, until its stream is open again (a stream resumed with
// nothing new to send brings no state).
let reconnects = 0;
setInterval(() => {
  if (!agent) return;
  if (agent.stats.reconnects !== reconnects) {
    reconnects = agent.stats.reconnects;
    setStatus("reconnecting…", "reconnecting");
  } else if (agent.connected && agent.view !== undefined && !status.classList.contains("connected")) {
    setStatus("connected", "connected");
  }
}, 250);

// open shows the conversation of the bridge at base.
function open(base, token) {
  if (agent) agent.close();
  for (const s of streams.values()) s.stop();
  streams = new Map();
  conversation.replaceChildren();
  setStatus("connecting…", "connecting");
  agent = connect(base, { token });
  window.reflexor = agent; // for tests and the curious
  reconnects = 0;
  agent.onState(() => {
    reconnects = agent.stats.reconnects;
    setStatus("connected", "connected");
  });
  agent.onState(render);
}

// items turns the view into the conversation, in time order.
function items(view) {
  const out = [];
  for (const m of view.userMessages ?? []) out.push({ at: m.timestamp, kind: "user", m });
  for (const m of view.assistantMessages ?? []) out.push({ at: m.timestamp, kind: "brain", m });
  const results = new Map((view.toolResults ?? []).map((r) => [r.toolCallId, r]));
  for (const c of view.toolCalls ?? []) out.push({ at: c.timestamp, kind: "tool", c, r: results.get(c.id) });
  if (view.summaryCutAt > 0) out.push({ at: view.summaryCutAt + 0.5, kind: "compressed" });
  out.sort((a, b) => a.at - b.at);
  return out;
}

// follow shows a streaming message's text as it arrives, once; a stream
// that ends with an error shows the failure at once (the state says so
// too, when it comes).
function follow(id) {
  if (streams.has(id)) return streams.get(id);
  const s = { text: "" };
  s.stop = agent.follow(id, (text, done, failure) => {
    s.text = text;
    const el = conversation.querySelector(`[data-id="${CSS.escape(id)}"]`);
    if (!el || !el.classList.contains("streaming")) return;
    if (failure !== undefined) failed(el, failure);
    else el.textContent = text;
  });
  streams.set(id, s);
  return s;
}

// failed shows el as a reply that failed, and why: the brain's call of the
// model did not give an answer. The conversation goes on: the next message
// is answered.
function failed(el, reason) {
  el.classList.remove("streaming");
  el.classList.add("failed");
  const head = document.createElement("strong");
  head.textContent = "No reply: the model failed.";
  const why = document.createElement("span");
  why.className = "reason";
  why.textContent = reason;
  const hint = document.createElement("small");
  hint.textContent = "Send a message to try again.";
  el.replaceChildren(head, why, hint);
}

function render(view) {
  const atBottom = conversation.scrollHeight - conversation.scrollTop - conversation.clientHeight < 40;
  const nodes = [];
  for (const it of items(view)) {
    const el = document.createElement("div");
    if (it.kind === "user") {
      el.className = "msg user";
      el.dataset.id = it.m.id;
      el.textContent = it.m.content;
    } else if (it.kind === "brain") {
      el.className = "msg brain";
      el.dataset.id = it.m.id;
      if (it.m.streaming) {
        el.classList.add("streaming");
        el.textContent = follow(it.m.id).text;
      } else {
        if (it.m.error !== undefined) failed(el, it.m.error);
        else el.textContent = it.m.content;
        const s = streams.get(it.m.id);
        if (s) {
          s.stop();
          streams.delete(it.m.id);
        }
      }
    } else if (it.kind === "tool") {
      el.className = "tool " + (!it.r ? "pending" : it.r.isError ? "failed" : "done");
      el.dataset.id = it.c.id;
      el.append(`${it.c.name}(${it.c.arguments})`);
      const st = document.createElement("span");
      st.className = "state";
      st.textContent = !it.r ? "running…" : it.r.isError ? "failed" : "done";
      el.append(st);
      if (it.r) {
        const res = document.createElement("span");
        res.className = "result";
        res.textContent = (it.r.isError ? "error: " : "→ ") + it.r.content;
        el.append(res);
      }
    } else {
      el.className = "compressed";
      el.textContent = "history above is summarised for the brain";
    }
    nodes.push(el);
  }
  conversation.replaceChildren(...nodes);
  if (atBottom) conversation.scrollTop = conversation.scrollHeight;
}
$("composer").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = $("message");
  const content = input.value.trim();
  if (!content) return;
  $("send").disabled = true;
  $("error").hidden = true;
  try {
    const { seq } = await agent.post({ type: "user-send-message", messageId: crypto.randomUUID(), content });
    input.value = "";
    await agent.until(seq);
  } catch (err) {
    $("error").textContent = `Not sent: ${err.message}`;
    $("error").hidden = false;
  } finally {
    $("send").disabled = false;
    input.focus();
  }
});

// The people and their conversations, when the server has them (a Fleet).
async function api(method, path, token) {
  const res = await fetch(path, { method, headers: { Authorization: `Bearer ${token}` } });
  const body = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) {
    const err = new Error(body.error || res.statusText);
    err.status = res.status;
    throw err;
  }
  return body;
}

async function people() {
  document.body.classList.add("users");
  const operator = params.get("token") || "";
  let session = localStorage.getItem("reflexor.session");
  let current = localStorage.getItem("reflexor.current");
  const list = $("conversations");

  async function identity() {
    session = (await api("POST", "api/sessions", operator)).token;
    localStorage.setItem("reflexor.session", session);
  }
  async function conversations() {
    try {
      return (await api("GET", "api/agents?limit=1000", session)).agents;
    } catch (err) {
      if (err.status !== 401) throw err;
      await identity(); // a token of another key: a new person
      return (await api("GET", "api/agents?limit=1000", session)).agents;
    }
  }
  function select(id) {
    current = id;
    localStorage.setItem("reflexor.current", id);
    for (const li of list.children) li.classList.toggle("current", li.dataset.id === id);
    open(`api/agents/${encodeURIComponent(id)}`, session);
  }
  async function refresh() {
    const agents = (await conversations()).sort((a, b) => a.created.localeCompare(b.created) || a.id.localeCompare(b.id));
    list.replaceChildren(...agents.map((a, i) => {
      const li = document.createElement("li");
      li.dataset.id = a.id;
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = `Conversation ${i + 1}`;
      const when = document.createElement("small");
      when.textContent = new Date(a.created).toLocaleString();
      b.append(when);
      b.addEventListener("click", () => select(a.id));
      li.append(b);
      li.classList.toggle("current", a.id === current);
      return li;
    }));
    return agents;
  }
  async function create() {
    const a = await api("POST", "api/agents", session);
    await refresh();
    select(a.id);
  }
  $("new").addEventListener("click", () => create().catch(shown));

  if (!session) await identity();
  // The operator's token has done its work: keep it out of the address
  // bar, where it would be shared with the page's URL.
  if (params.has("token")) history.replaceState(null, "", location.pathname + location.hash);
  const agents = await refresh();
  if (agents.some((a) => a.id === current)) select(current);
  else if (agents.length > 0) select(agents[agents.length - 1].id);
  else await create();
}

function shown(err) {
  $("error").textContent = err.message;
  $("error").hidden = false;
}

const config = await fetch("config.json").then((r) => (r.ok ? r.json() : {})).catch(() => ({}));
if (config.users) {
  people().catch(shown);
} else {
  open("agent", params.get("token") || "");
}
