// The official A2A JavaScript SDK's client (@a2a-js/sdk) talks to Reflexor
// served over A2A: it fetches the agent card, sends a message, streams the
// task's updates until the task waits for the user (input-required), and
// answers it. Each step is a line on stdout: STEP JSON. Arguments: the
// agent's A2A base URL (ending in /), the bearer token.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const [base, token] = process.argv.slice(2);
const authed = (url, init = {}) => {
  const headers = new Headers(init.headers ?? {});
  headers.set("Authorization", "Bearer " + token);
  return fetch(url, { ...init, headers });
};
const stateName = (n) => Object.keys(TaskState).find((k) => TaskState[k] === n) ?? String(n);
const out = (step, value) => process.stdout.write(step + " " + JSON.stringify(value) + "\n");
const text = (s) => [{ content: { $case: "text", value: s } }];
const words = (parts) => (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("\n");

const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authed })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authed }),
  }),
);
const client = await factory.createFromUrl(base);
const card = await client.getAgentCard();
out("CARD", { name: card.name, description: card.description, streaming: card.capabilities?.streaming, skills: card.skills.map((s) => s.id), url: card.supportedInterfaces[0].url });

// A message, answered when the task stops working.
const sent = await client.sendMessage({ message: { messageId: "a2a-1", role: Role.ROLE_USER, parts: text("hello there") } });
const taskId = sent.id;
out("SENT", { id: sent.id, contextId: sent.contextId, state: stateName(sent.status?.state), reply: words(sent.status?.message?.parts), history: sent.history.length });

// The next, streamed: the task, then its updates, until it waits for the user.
const events = [];
for await (const ev of client.sendMessageStream({ message: { messageId: "a2a-2", taskId, role: Role.ROLE_USER, parts: text("what is 6*7?") } })) {
  const v = ev.payload?.value;
  switch (ev.payload?.$case) {
    case "task":
      events.push({ kind: "task", id: v.id, state: stateName(v.status?.state) });
      break;
    case "statusUpdate":
      events.push({ kind: "status", taskId: v.taskId, state: stateName(v.status?.state), text: words(v.status?.message?.parts) });
      break;
    case "artifactUpdate":
      events.push({ kind: "artifact", taskId: v.taskId, id: v.artifact?.artifactId, text: words(v.artifact?.parts) });
      break;
    default:
      events.push({ kind: ev.payload?.$case ?? "none" });
  }
}
out("STREAMED", events);

// The task waits for the user: get it, and answer it.
const got = await client.getTask({ id: taskId, historyLength: 10 });
out("GOT", { state: stateName(got.status?.state), reply: words(got.status?.message?.parts), history: got.history.map((m) => words(m.parts)) });
const answered = await client.sendMessage({ message: { messageId: "a2a-3", taskId, role: Role.ROLE_USER, parts: text("thanks") } });
out("ANSWERED", { id: answered.id, state: stateName(answered.status?.state), reply: words(answered.status?.message?.parts) });

// Another task's id is not found.
try {
  await client.getTask({ id: "someone-else" });
  out("OTHER", { found: true });
} catch (e) {
  out("OTHER", { found: false, error: String(e?.message ?? e), code: e?.code ?? null });
}
