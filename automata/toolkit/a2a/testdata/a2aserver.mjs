// An A2A agent written with the official A2A JavaScript SDK
// (@a2a-js/sdk/server, on Express): it upper-cases what it is sent. Sent
// "ask", it asks which word (input-required), and upper-cases the answer;
// sent "fail", its task fails. It listens on a loopback port of its own
// and prints "LISTENING <base URL>"; argument: the bearer token it wants
// ("" for none).
import express from "express";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { TaskState, Role } from "@a2a-js/sdk";

const token = process.argv[2] ?? "";
const text = (s) => [{ content: { $case: "text", value: s }, metadata: undefined, filename: "", mediaType: "" }];
const words = (m) => (m?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join(" ");

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const said = words(ctx.userMessage).trim();
    const status = (state, msg) => ({ state, message: msg ? { messageId: "m-" + Math.random().toString(36).slice(2), contextId, taskId, role: Role.ROLE_AGENT, parts: text(msg), metadata: undefined, extensions: [], referenceTaskIds: [] } : undefined, timestamp: new Date().toISOString() });
    bus.publish(AgentEvent.task({ id: taskId, contextId, status: status(TaskState.TASK_STATE_WORKING), artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    if (said === "ask") {
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_INPUT_REQUIRED, "Which word shall I upper-case?"), metadata: undefined }));
    } else if (said === "fail") {
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_FAILED, "I was told to fail."), metadata: undefined }));
    } else {
      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: "upper", name: "upper", description: "", parts: text(said.toUpperCase()), metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined }));
    }
    bus.finished();
  },
  async cancelTask() {},
};

const app = express();
let base = "";
const card = async () => ({
  name: "upper",
  description: "Upper-cases a text.",
  supportedInterfaces: [{ url: base + "/a2a/jsonrpc", protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" }],
  provider: undefined,
  version: "1.0.0",
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [{ id: "upper", name: "Upper-case", description: "Upper-cases the text it is sent.", tags: ["text"], examples: ["hello"], inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: [],
});
const handler = new DefaultRequestHandler(await (async () => { base = "http://127.0.0.1"; return card(); })(), new InMemoryTaskStore(), executor);
app.use((req, res, next) => {
  if (token && req.headers.authorization !== "Bearer " + token) {
    res.status(401).json({ error: "unauthorized" });
    return;
  }
  next();
});
app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: card }));
app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
const server = app.listen(0, "127.0.0.1", () => {
  base = "http://127.0.0.1:" + server.address().port;
  process.stdout.write("LISTENING " + base + "\n");
});
process.stdin.on("end", () => server.close(() => process.exit(0)));
process.stdin.resume();
