// Package a2a mounts a remote agent of the Agent2Agent protocol (A2A,
// version 1.0, JSON-RPC) in a toolkit (package automata/toolkit) as one
// tool: the model sends the agent a message, and is told what the agent
// answered — under every guard a Go tool has (the time of each try,
// retries, the concurrency limits, the circuit breaker, the permission
// checks, the filters and the bound on what the model is told,
// telemetry), because it is a toolkit tool (toolkit.Remote) in a
// toolkit.Mount, as package toolkit/mcp mounts an MCP server's.
//
//	kit, err := toolkit.New(toolkit.Config{}, weather)
//	translator, err := a2a.Mount(kit, a2a.Config{
//		URL:    "https://translator.example/a2a/",
//		Header: http.Header{"Authorization": {"Bearer " + token}},
//		Policy: toolkit.Policy{Timeout: 2 * time.Minute},
//	})
//	defer translator.Close()
//	err = translator.Ready(ctx) // optional: wait until its tool is in the kit
//
// Mount returns at once: the agent's card is fetched in the background
// (again after a backoff, MinBackoff doubled up to MaxBackoff, until it
// is), and the tool joins the kit then, so that an agent starts whether
// the remote one is up or not.
//
// # The tool
//
// Its name is Config.Name, or the card's name with each character a chat
// API refuses made '_' (one taken by another tool of the kit gets
// Config.Prefix, by toolkit.Mount's rule). Its description is the card's,
// with the card's skills; its arguments are {"message": the text to send,
// "taskId": the task to answer, optional}.
//
// A call is a SendMessage (blocking: the remote agent answers when its
// task stops working) of one text part, its messageId the call's
// idempotency key (toolkit.Call.Key, or its SHA-256 when it is long or
// not printable ASCII: the same on every try and after a restart, so
// that an agent that deduplicates by messageId applies it once). What the model is told:
//
//   - a message: its text;
//   - a completed task: its artifacts' text (its status message's, when it
//     has no artifact);
//   - a task that waits for input: `The agent asks (answer it with taskId
//     "…"): …` — the model answers with a call that names the task;
//   - a task still working (the remote agent answered before it was
//     done): its state and what it said so far;
//   - a failed, rejected or canceled task: a failure of the call (the
//     toolkit's KindFailure, counted by the breaker), with the agent's
//     words.
//
// A JSON-RPC error is a failure, but invalid params (-32602), task not
// found (-32001) and an unsupported content type (-32005) are KindInvalid,
// not tried again; 401 and 403 are KindPermission.
//
// # Limits
//
//   - ConnectTimeout (30 s): each fetch of the card;
//   - MaxCardBytes (1 MiB) and MaxResponseBytes (4 MiB): the card, and the
//     answer to a call — a longer one is a failure, and memory stays
//     bounded;
//   - redirects are not followed (a 3xx is a failure), and the card's
//     JSON-RPC interface must be at the card's own origin: the Header
//     (a token) goes nowhere the operator did not name;
//   - and the toolkit's, per tool (Config.Policy, as toolkit.Policy):
//     Timeout (30 s a try: the whole SendMessage), Retries (0),
//     MaxConcurrent (8), MaxResultBytes (64 KiB), the breaker (5
//     failures, 30 s).
//
// # What it is not
//
// It does not stream (SendStreamingMessage): a call waits for the
// blocking answer, bounded by the try's Timeout. It sends text only, and
// reads text and data parts (a file part is named by its URL). It speaks
// A2A 1.0 over JSON-RPC only (not v0.3, HTTP+JSON or gRPC), and does not
// re-read a card that changes. It does not serve an agent over A2A:
// automata/httpbridge/a2aserve does.
package a2a
