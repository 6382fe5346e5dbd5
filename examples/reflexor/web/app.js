// The Reflexor page: the conversation the user actor observes (its
// ContextOfUser, kept in step by the bridge's client), the brain's replies
// as they stream, tool calls with their status and results, where the
// history was compressed, and an input box.
import { connect } from "/agent/client.js";

const params = new URLSearchParams(location.search);
const agent = connect("/agent", { token: params.get("token") || "" });
window.reflexor = agent; // for tests and the curious

const $ = (id) => document.getElementById(id);
const conversation = $("conversation");
const status = $("status");
const streams = new Map(); // message id -> {text, stop}

function setStatus(text, cls) {
  status.textContent = text;
  status.className = `status ${cls}`;
}

// The connection indicator: connected once a state arrives, reconnecting
// whenever the client has had to reconnect since.
let reconnects = 0;
agent.onState(() => {
  reconnects = agent.stats.reconnects;
  setStatus("connected", "connected");
});
setInterval(() => {
  if (agent.stats.reconnects !== reconnects) {
    reconnects = agent.stats.reconnects;
    setStatus("reconnecting…", "reconnecting");
  }
}, 250);

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

// follow shows a streaming message's text as it arrives, once.
function follow(id) {
  if (streams.has(id)) return streams.get(id);
  const s = { text: "" };
  s.stop = agent.follow(id, (text) => {
    s.text = text;
    const el = conversation.querySelector(`[data-id="${CSS.escape(id)}"]`);
    if (el && el.classList.contains("streaming")) el.textContent = text;
  });
  streams.set(id, s);
  return s;
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
        el.textContent = it.m.content;
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
agent.onState(render);

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
