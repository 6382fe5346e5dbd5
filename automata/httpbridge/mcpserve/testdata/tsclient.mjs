// The official TypeScript SDK's MCP client against an agent's MCP server:
// node tsclient.mjs <agent endpoint> <owner's token> <another's token>.
// It lists the tools, calls send-user-message, reads the state resource,
// subscribes and prints SUBSCRIBED, waits for an update (caused by another
// client's input), then connects as another identity and must be refused.
// Each step prints one line: STEP <json>.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token, other] = process.argv.slice(2);
const say = (step, value) => console.log(step + " " + JSON.stringify(value));

function transport(tok) {
	return new StreamableHTTPClientTransport(new URL(url), {
		requestInit: { headers: { Authorization: "Bearer " + tok } },
	});
}

const client = new Client({ name: "ts-test", version: "1.0.0" });
await client.connect(transport(token));

const tools = await client.listTools();
say("TOOLS", tools.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })));

const call = await client.callTool({ name: "send-user-message", arguments: { id: "ts-1", content: "from typescript", timestamp: 0, waitFor: "replied" } });
say("CALLED", call);

const { resources } = await client.listResources();
const uri = resources[0].uri;
const read = await client.readResource({ uri });
say("READ", read);

const updated = new Promise((resolve) => {
	client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params));
});
await client.subscribeResource({ uri });
say("SUBSCRIBED", uri);
const timeout = setTimeout(() => { say("NOUPDATE", uri); process.exit(1); }, 20000);
say("UPDATED", await updated);
clearTimeout(timeout);
await client.close();

const intruder = new Client({ name: "ts-intruder", version: "1.0.0" });
try {
	await intruder.connect(transport(other));
	say("NOTREFUSED", url);
	process.exit(1);
} catch (e) {
	say("REFUSED", String(e && e.message || e));
}
