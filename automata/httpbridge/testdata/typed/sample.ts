// A page's use of the typed client over Reflexor's generated types:
// TestClientTypes type-checks it with tsc --strict. Each line under an
// expected-error directive must not compile: tsc fails if it does.
import { connect, applyPatch, type PostError } from "../../client.js";
import type { ClientInputFromUser, ContextOfUser } from "../../../agents/reflexor/page/agent";

const agent = connect<ContextOfUser, ClientInputFromUser>("/agents/report-19", { token: "t" });

agent.onState((view, seq) => {
  const last = view.userMessages.at(-1);
  console.log(seq, last?.content, view.assistantMessages.length);
});

export async function send(text: string): Promise<number> {
  try {
    const { seq } = await agent.post({ type: "user-send-message", messageId: "u1", content: text }, { idempotencyKey: "u1" });
    const view = await agent.until(seq);
    return view.userMessages.length;
  } catch (e) {
    return (e as PostError).status;
  }
}

export function wrong(): void {
  // @ts-expect-error: the brain's input is not the user's to post.
  void agent.post({ type: "brain-send-message-start", messageId: "a1" });
  // @ts-expect-error: the server stamps the timestamp; the client variant has none.
  void agent.post({ type: "user-send-message", messageId: "u1", content: "hi", timestamp: 1 });
  // @ts-expect-error: content is required.
  void agent.post({ type: "user-send-message", messageId: "u1" });
  agent.onState((view) => {
    // @ts-expect-error: the user's context has no such property.
    console.log(view.userMessage);
  });
}

const stop = agent.follow("reply-a1", (text, done, reason) => {
  if (done && reason !== undefined) console.log("failed:", reason);
  else console.log(text);
});
stop();
export const patched: { a: number } = applyPatch({ a: 1 }, [{ op: "replace", path: "/a", value: 2 }]);
agent.close();
