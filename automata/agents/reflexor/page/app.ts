// The Reflexor page: the conversation the user actor observes (its
// ContextOfUser, kept in step by the bridge's client), the brain's replies
// as they stream, tool calls with their status and results, where the
// history was compressed, and an input box. Served by a Fleet, the page is
// one person's: it asks the server for an identity of its own with the
// operator's token it was opened with, keeps it (localStorage), and lists
// that person's conversations on the side. Every URL it asks for is
// relative to its own, so that it works under any prefix (/, /support/).
import { connect, type Agent, type PostError } from "../../../httpbridge/client.js";
import type { Approval, AssistantMessage, ClientInputFromApprover, ClientInputFromUser, ContextOfUser, ToolCallRecord, ToolResult, UserMessage } from "./agent";

// The page speaks for the user, and, where the server lets it (Config's
// PageApproves), for the approver of tool calls; where it does not, the
// server refuses the approver's inputs with 403, which the card shows.
type Conversation = Agent<ContextOfUser, ClientInputFromUser | ClientInputFromApprover>;

// An item of the conversation, in time order.
type Item =
  | { at: number; kind: "user"; m: UserMessage }
  | { at: number; kind: "brain"; m: AssistantMessage }
  | { at: number; kind: "tool"; c: ToolCallRecord; r: ToolResult | undefined; a: Approval | undefined }
  | { at: number; kind: "compressed" };

// A stream followed: the text so far, and how to stop following it.
interface Stream {
  text: string;
  stop: () => void;
}

// An agent of a person, as the Fleet's API lists it.
interface Listed {
  id: string;
  created: string;
}

const params = new URLSearchParams(location.search);
const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;
const conversation = $("conversation");
const status = $("status");
let agent: Conversation | null = null; // the conversation shown
let streams = new Map<string, Stream>(); // message id -> {text, stop}

function setStatus(text: string, cls: string): void {
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
function open(base: string, token: string): void {
  if (agent) agent.close();
  for (const s of streams.values()) s.stop();
  streams = new Map();
  conversation.replaceChildren();
  setStatus("connecting…", "connecting");
  const a = connect<ContextOfUser, ClientInputFromUser>(base, { token });
  agent = a;
  (window as unknown as { reflexor: Conversation }).reflexor = a; // for tests and the curious
  reconnects = 0;
  a.onState(() => {
    reconnects = a.stats.reconnects;
    setStatus("connected", "connected");
  });
  a.onState(render);
}

// items turns the view into the conversation, in time order.
function items(view: ContextOfUser): Item[] {
  const out: Item[] = [];
  for (const m of view.userMessages ?? []) out.push({ at: m.timestamp, kind: "user", m });
  for (const m of view.assistantMessages ?? []) out.push({ at: m.timestamp, kind: "brain", m });
  const results = new Map((view.toolResults ?? []).map((r) => [r.toolCallId, r]));
  const approvals = new Map((view.approvals ?? []).map((a) => [a.toolCallId, a]));
  for (const c of view.toolCalls ?? []) out.push({ at: c.timestamp, kind: "tool", c, r: results.get(c.id), a: approvals.get(c.id) });
  if (view.summaryCutAt > 0) out.push({ at: view.summaryCutAt + 0.5, kind: "compressed" });
  out.sort((a, b) => a.at - b.at);
  return out;
}

// follow shows a streaming message's text as it arrives, once; a stream
// that ends with an error shows the failure at once (the state says so
// too, when it comes).
function follow(a: Conversation, id: string): Stream {
  const known = streams.get(id);
  if (known) return known;
  const s: Stream = { text: "", stop: () => {} };
  s.stop = a.follow(id, (text, done, failure) => {
    s.text = text;
    const el = conversation.querySelector<HTMLElement>(`[data-id="${CSS.escape(id)}"]`);
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
function failed(el: HTMLElement, reason: string): void {
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

// renderUsage shows the conversation's usage of the model (its tokens and
// their cost, from the state), and, when the brain has stopped for its
// budget, the budget's limits.
function renderUsage(view: ContextOfUser): void {
  const u = view.usage;
  const line = $("usage");
  const tokens = (u?.inputTokens ?? 0) + (u?.outputTokens ?? 0);
  let text = `${tokens} tokens (${u?.inputTokens ?? 0} in, ${u?.outputTokens ?? 0} out) · $${(u?.cost ?? 0).toFixed(4)}`;
  const ex = view.budgetExhausted;
  if (ex && ex.timestamp !== 0) {
    const limits: string[] = [];
    if (ex.maxTokens > 0) limits.push(`${ex.maxTokens} tokens`);
    if (ex.maxCost > 0) limits.push(`$${ex.maxCost}`);
    text += ` · budget exhausted (${limits.join(", ")}): the brain answers no more`;
  }
  line.textContent = text;
  line.classList.toggle("exhausted", ex !== undefined && ex.timestamp !== 0);
}

function render(view: ContextOfUser): void {
  const a = agent;
  if (!a) return;
  const atBottom = conversation.scrollHeight - conversation.scrollTop - conversation.clientHeight < 40;
  const nodes: HTMLElement[] = [];
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
        el.textContent = follow(a, it.m.id).text;
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
      // A call approved with edited arguments ran with those.
      const edited = it.a?.approved && it.a.arguments ? it.a.arguments : undefined;
      el.append(`${it.c.name}(${edited ?? it.c.arguments})`);
      if (edited !== undefined) {
        const note = document.createElement("span");
        note.className = "edited";
        note.textContent = `arguments edited on approval (the brain's: ${it.c.arguments})`;
        el.append(note);
      }
      const st = document.createElement("span");
      st.className = "state";
      st.textContent = !it.r ? "running…" : it.r.isError ? "failed" : "done";
      el.append(st);
      if (it.c.needsApproval && !it.r) {
        if (it.a) st.textContent = it.a.approved ? "approved, running…" : "denied";
        else {
          st.textContent = "waiting for approval";
          el.classList.add("approval");
          el.append(approvalCard(a, it.c));
        }
      }
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
  renderUsage(view);
  if (atBottom) conversation.scrollTop = conversation.scrollHeight;
}
// drafts keeps the arguments the approver is editing, by tool call, across
// the renders that state updates make.
const drafts = new Map<string, string>();

// approvalCard is what a tool call waiting for approval shows: its
// arguments, editable, its deadline, and Approve and Deny.
function approvalCard(a: Conversation, c: ToolCallRecord): HTMLElement {
  const card = document.createElement("div");
  card.className = "card";
  const args = document.createElement("textarea");
  args.className = "arguments";
  args.value = drafts.get(c.id) ?? c.arguments;
  args.rows = 3;
  args.addEventListener("input", () => drafts.set(c.id, args.value));
  const when = document.createElement("small");
  if (c.approvalDeadline) when.textContent = `denied if not approved by ${new Date(c.approvalDeadline).toLocaleString()}`;
  const err = document.createElement("span");
  err.className = "error";
  const send = async (input: ClientInputFromApprover) => {
    for (const b of Array.from(card.querySelectorAll("button"))) b.disabled = true;
    try {
      const { seq } = await a.post(input);
      drafts.delete(c.id);
      await a.until(seq);
    } catch (e) {
      err.textContent = (e as PostError).status === 403 ? "Not yours to approve: this page does not speak for the approver." : `Not sent: ${(e as Error).message}`;
      for (const b of Array.from(card.querySelectorAll("button"))) b.disabled = false;
    }
  };
  const approve = document.createElement("button");
  approve.type = "button";
  approve.className = "approve";
  approve.textContent = "Approve";
  approve.addEventListener("click", () => {
    const edited = args.value.trim();
    send({ type: "approver-approve-tool-call", toolCallId: c.id, ...(edited !== c.arguments ? { arguments: edited } : {}) });
  });
  const deny = document.createElement("button");
  deny.type = "button";
  deny.className = "deny";
  deny.textContent = "Deny";
  deny.addEventListener("click", () => send({ type: "approver-deny-tool-call", toolCallId: c.id, reason: "denied on the page" }));
  card.append(args, approve, deny, when, err);
  return card;
}

$("composer").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = $<HTMLInputElement>("message");
  const content = input.value.trim();
  if (!content || !agent) return; // no conversation is open yet
  $<HTMLButtonElement>("send").disabled = true;
  $("error").hidden = true;
  try {
    const { seq } = await agent.post({ type: "user-send-message", messageId: crypto.randomUUID(), content });
    input.value = "";
    await agent.until(seq);
  } catch (err) {
    $("error").textContent = `Not sent: ${(err as Error).message}`;
    $("error").hidden = false;
  } finally {
    $<HTMLButtonElement>("send").disabled = false;
    input.focus();
  }
});

// The people and their conversations, when the server has them (a Fleet).
async function api<T>(method: string, path: string, token: string): Promise<T> {
  const res = await fetch(path, { method, headers: { Authorization: `Bearer ${token}` } });
  const body = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) {
    const err = new Error(body.error || res.statusText) as PostError;
    err.status = res.status;
    throw err;
  }
  return body as T;
}

async function people(): Promise<void> {
  document.body.classList.add("users");
  const operator = params.get("token") || "";
  let session = localStorage.getItem("reflexor.session") ?? "";
  let current = localStorage.getItem("reflexor.current");
  const list = $("conversations");

  async function identity() {
    session = (await api<{ token: string }>("POST", "api/sessions", operator)).token;
    localStorage.setItem("reflexor.session", session);
  }
  async function conversations(): Promise<Listed[]> {
    try {
      return (await api<{ agents: Listed[] }>("GET", "api/agents?limit=1000", session)).agents;
    } catch (err) {
      if ((err as PostError).status !== 401) throw err;
      await identity(); // a token of another key: a new person
      return (await api<{ agents: Listed[] }>("GET", "api/agents?limit=1000", session)).agents;
    }
  }
  function select(id: string): void {
    current = id;
    localStorage.setItem("reflexor.current", id);
    for (const li of Array.from(list.children) as HTMLElement[]) li.classList.toggle("current", li.dataset.id === id);
    open(`api/agents/${encodeURIComponent(id)}`, session);
  }
  async function refresh(): Promise<Listed[]> {
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
  async function create(): Promise<void> {
    const a = await api<Listed>("POST", "api/agents", session);
    await refresh();
    select(a.id);
  }
  $("new").addEventListener("click", () => create().catch(shown));

  if (!session) await identity();
  // The operator's token has done its work: keep it out of the address
  // bar, where it would be shared with the page's URL.
  if (params.has("token")) history.replaceState(null, "", location.pathname + location.hash);
  const agents = await refresh();
  if (current !== null && agents.some((a) => a.id === current)) select(current);
  else if (agents.length > 0) select(agents[agents.length - 1].id);
  else await create();
}

function shown(err: unknown): void {
  $("error").textContent = (err as Error).message;
  $("error").hidden = false;
}

const config: { users?: boolean } = await fetch("config.json").then((r) => (r.ok ? r.json() : {})).catch(() => ({}));
if (config.users) {
  people().catch(shown);
} else {
  open("agent", params.get("token") || "");
}
