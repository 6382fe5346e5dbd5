// A client of Reflexor's UI message stream on the AI SDK's own client
// side (the npm package ai): the Chat that useChat wraps, over its
// DefaultChatTransport, as a page on useChat would use it. Run by
// TestAISDKChat (chat_test.go), which serves the agent and checks what this
// prints against the agent's state:
//
//	node chat.mjs <agent URL> <token>
//
// It prints one JSON line per scenario: the chat's status and messages
// (and, where the connection was cut, the reply as it stood then).
//
//   - tools: a message whose reply calls a tool, followed to its end.
//   - disconnect: the connection breaks in the middle of the reply (after
//     its first text after the tool's result); the chat resumes it
//     (resumeStream, GET chat/{id}/stream).
//   - reload: the page goes away in the middle of a reply; a new chat
//     starts from the conversation the agent lists (GET chat) and resumes
//     the reply.
import { AbstractChat, DefaultChatTransport } from 'ai';

const [base, token] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };

// The state a Chat keeps its messages in (useChat's is React's).
class State {
  constructor(messages = []) {
    this.status = 'ready';
    this.error = undefined;
    this.messages = messages;
  }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(v) { return structuredClone(v); }
}

class Chat extends AbstractChat {
  constructor({ messages, ...init }) {
    super({ ...init, state: new State(messages) });
  }
}

// cutAfterToolText is a fetch whose response to a chat's POST, while
// cut() says so, ends as a broken connection does at the first text delta
// after a tool's result: it cancels the connection and errors the body
// with the TypeError fetch gives for a network failure. onCut is called
// then.
function cutAfterToolText(cut, onCut = () => {}) {
  return async (url, init) => {
    const res = await fetch(url, init);
    if (init?.method !== 'POST' || !res.ok || !cut()) return res;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let seen = '';
    let afterTool = false;
    let broken = false;
    const body = new ReadableStream({
      async pull(controller) {
        if (broken) {
          // The client has taken the last event in: the connection
          // breaks now.
          await reader.cancel();
          onCut();
          controller.error(new TypeError('network error'));
          return;
        }
        const { done, value } = await reader.read();
        if (done) { controller.close(); return; }
        seen += decoder.decode(value, { stream: true });
        let i;
        while ((i = seen.indexOf('\n\n')) >= 0) {
          const event = seen.slice(0, i);
          seen = seen.slice(i + 2);
          const data = event.split('\n').find((l) => l.startsWith('data: '))?.slice(6);
          if (!data || data === '[DONE]') continue;
          const chunk = JSON.parse(data);
          if (chunk.type === 'tool-output-available') afterTool = true;
          if (afterTool && chunk.type === 'text-delta') {
            // This event goes through; the connection breaks after it.
            controller.enqueue(new TextEncoder().encode(event + '\n\n'));
            broken = true;
            return;
          }
          controller.enqueue(new TextEncoder().encode(event + '\n\n'));
        }
      },
      cancel() { return reader.cancel(); },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
}

// userMessage is a message of the user with the id given (sendMessage's
// {text} form draws one).
function userMessage(id, text) {
  return { id, role: 'user', parts: [{ type: 'text', text }] };
}

function assistantText(messages) {
  const last = messages.at(-1);
  if (last?.role !== 'assistant') return null;
  return last.parts.filter((p) => p.type === 'text').map((p) => p.text);
}

function report(scenario, chat, extra = {}) {
  console.log(JSON.stringify({ scenario, status: chat.status, error: chat.error?.message, messages: chat.messages, ...extra }));
}

const api = `${base}/chat`;

// tools, then disconnect, on one chat
let cut = false;
const chat = new Chat({ id: 'chat-1', transport: new DefaultChatTransport({ api, headers, fetch: cutAfterToolText(() => cut) }) });
await chat.sendMessage(userMessage('u-tools', 'What is 6*7?'));
report('tools', chat);

cut = true;
await chat.sendMessage(userMessage('u-disconnect', 'Count these words slowly please'));
cut = false;
const partial = { status: chat.status, error: chat.error?.message, text: assistantText(chat.messages) };
await chat.resumeStream();
report('disconnect', chat, { partial });

// reload
{
  let stop;
  const stopped = new Promise((resolve) => { stop = resolve; });
  const leaving = new Chat({
    id: 'chat-1',
    messages: chat.messages,
    transport: new DefaultChatTransport({ api, headers, fetch: cutAfterToolText(() => true, () => stop()) }),
  });
  const sent = leaving.sendMessage(userMessage('u-reload', 'What time is it, slowly?'));
  await stopped;
  await sent;
  // The page is gone; a new one starts from what the agent lists.
  const res = await fetch(api, { headers });
  if (!res.ok) throw new Error(`GET chat: ${res.status} ${await res.text()}`);
  const messages = await res.json();
  const listed = { count: messages.length, text: assistantText(messages) };
  const reloaded = new Chat({ id: 'chat-1', messages, transport: new DefaultChatTransport({ api, headers }) });
  await reloaded.resumeStream();
  report('reload', reloaded, { listed });
}
