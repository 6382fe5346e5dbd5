// The browser client of a moora httpbridge: an ES module, no build step.
//
//   import { connect } from "/agent/client.js";
//   const agent = connect("/agent", { token: "secret" });
//   agent.onState((view, seq) => render(view));
//   await agent.post({ type: "send-user-message", id: "u1", content: "hi" });
//   agent.follow("reply-u1", (text, done) => show(text, done));
//
// An input leaves out the properties its spec marks readOnly, such as a
// timestamp that the server's admission step stamps, when the bridge
// decodes with decl.DecodeClientInput; a spec that does not mark them makes
// every client send a placeholder (timestamp: 0) that admission overwrites.
//
// It reads the state stream with fetch (so that it can send the
// Authorization and Last-Event-ID headers, which EventSource cannot), applies
// the snapshot and then each JSON Patch delta, checks that each delta starts
// where the view is (a gap makes it reconnect from its last id), and
// reconnects by itself after any error, resuming from the last id it applied.

// applyPatch applies the add, remove and replace operations of a JSON Patch
// (RFC 6902), as the bridge writes them, to doc, and returns the result.
export function applyPatch(doc, patch) {
  for (const op of patch) {
    if (op.path === "") {
      doc = op.value;
      continue;
    }
    const parts = op.path.slice(1).split("/").map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~"));
    let parent = doc;
    for (const p of parts.slice(0, -1)) {
      parent = Array.isArray(parent) ? parent[Number(p)] : parent[p];
      if (parent === undefined || parent === null) throw new Error(`patch: no ${op.path}`);
    }
    const key = parts[parts.length - 1];
    if (Array.isArray(parent)) {
      const i = key === "-" ? parent.length : Number(key);
      if (!(i >= 0 && i <= parent.length)) throw new Error(`patch: ${op.path} out of range`);
      if (op.op === "add") parent.splice(i, 0, op.value);
      else if (op.op === "replace") parent[i] = op.value;
      else if (op.op === "remove") parent.splice(i, 1);
      else throw new Error(`patch: unsupported op ${op.op}`);
    } else {
      if (op.op === "add" || op.op === "replace") parent[key] = op.value;
      else if (op.op === "remove") delete parent[key];
      else throw new Error(`patch: unsupported op ${op.op}`);
    }
  }
  return doc;
}

// readEvents reads SSE events from a fetch response and calls onEvent with
// {id, event, data} for each; it resolves when the response ends.
async function readEvents(response, onEvent, signal) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let ev = { id: "", event: "message", data: "" };
  const abort = () => reader.cancel().catch(() => {});
  signal.addEventListener("abort", abort);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line === "") {
          if (ev.data !== "") onEvent(ev);
          ev = { id: "", event: "message", data: "" };
        } else if (line.startsWith(":")) {
          // a heartbeat
        } else {
          const c = line.indexOf(":");
          const field = c < 0 ? line : line.slice(0, c);
          const val = c < 0 ? "" : line.slice(c + 1).replace(/^ /, "");
          if (field === "id") ev.id = val;
          else if (field === "event") ev.event = val;
          else if (field === "data") ev.data += (ev.data ? "\n" : "") + val;
        }
      }
    }
  } finally {
    signal.removeEventListener("abort", abort);
  }
}

// connect follows the agent served by the bridge at base (a URL path or
// URL, without the trailing slash). Options: token (a bearer token), retry
// (milliseconds between reconnects, default 500).
export function connect(base, options = {}) {
  const headers = {};
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  const retry = options.retry ?? 500;
  const listeners = new Set();
  const stats = { snapshots: 0, resyncs: 0, deltas: 0, gaps: 0, reconnects: 0 };
  const stop = new AbortController();
  const agent = {
    view: undefined, // the projection of the state, as plain JSON
    seq: undefined, // the sequence number it is at
    id: "", // the id of the last event applied
    // connected: the state stream is open (its response has come) and
    // the view is up to date as of then; false while it reconnects.
    connected: false,
    stats,
    onState(fn) {
      listeners.add(fn);
      if (agent.view !== undefined) fn(agent.view, agent.seq);
      return () => listeners.delete(fn);
    },
    // post sends an input; it resolves to the bridge's answer ({seq}) or
    // throws an Error with the bridge's message and status.
    async post(input, { idempotencyKey } = {}) {
      const h = { ...headers, "Content-Type": "application/json" };
      if (idempotencyKey) h["Idempotency-Key"] = idempotencyKey;
      const res = await fetch(`${base}/inputs`, { method: "POST", headers: h, body: JSON.stringify(input) });
      const body = await res.json().catch(() => ({ error: res.statusText }));
      if (!res.ok) {
        const err = new Error(body.error || res.statusText);
        err.status = res.status;
        throw err;
      }
      return body;
    },
    // until resolves once the view has reached seq (a POST's answer).
    until(seq) {
      return new Promise((resolve) => {
        const off = agent.onState((view, at) => {
          if (at >= seq) {
            queueMicrotask(() => off());
            resolve(view);
          }
        });
      });
    },
    // follow reads a token stream; fn(text, done) gets the text so far
    // after each chunk, and done = true with the whole text at the end; a
    // stream that failed ends with fn(text, true, reason), reason being
    // why (the stream's error event). It resumes by offset after a
    // connection error. It returns a function that stops.
    follow(name, fn) {
      const ctl = new AbortController();
      let text = "";
      let offset = "";
      (async () => {
        while (!ctl.signal.aborted && !stop.signal.aborted) {
          try {
            const h = { ...headers };
            if (offset) h["Last-Event-ID"] = offset;
            const res = await fetch(`${base}/streams/${encodeURIComponent(name)}`, { headers: h, signal: ctl.signal });
            if (!res.ok) throw new Error(`stream ${name}: ${res.status}`);
            let ended = false;
            await readEvents(res, (ev) => {
              const data = JSON.parse(ev.data);
              if (ev.event === "chunk") {
                text += data;
                offset = ev.id;
                fn(text, false);
              } else if (ev.event === "end") {
                text = data;
                ended = true;
                fn(text, true);
              } else if (ev.event === "error") {
                ended = true;
                fn(text, true, data);
              }
            }, ctl.signal);
            if (ended) return;
          } catch (e) {
            if (ctl.signal.aborted) return;
          }
          await new Promise((r) => setTimeout(r, retry));
        }
      })();
      return () => ctl.abort();
    },
    close() {
      stop.abort();
    },
  };
  const emit = () => {
    for (const fn of listeners) fn(agent.view, agent.seq);
  };
  (async () => {
    while (!stop.signal.aborted) {
      try {
        const h = { ...headers };
        if (agent.id) h["Last-Event-ID"] = agent.id;
        const res = await fetch(`${base}/state`, { headers: h, signal: stop.signal });
        if (!res.ok) throw new Error(`state: ${res.status}`);
        agent.connected = true;
        const gap = new AbortController();
        const both = AbortSignal.any([stop.signal, gap.signal]);
        await readEvents(res, (ev) => {
          if (gap.signal.aborted) return;
          const data = JSON.parse(ev.data);
          if (ev.event === "snapshot" || ev.event === "resync") {
            stats[ev.event === "snapshot" ? "snapshots" : "resyncs"]++;
            agent.view = data.view;
            agent.seq = data.seq;
            agent.id = ev.id;
            emit();
          } else if (ev.event === "delta") {
            // The delta applies to any view from base up to (not
            // including) seq; anything else is a gap.
            if (agent.seq === undefined || data.base > agent.seq || agent.seq >= data.seq) {
              stats.gaps++;
              gap.abort();
              return;
            }
            agent.view = applyPatch(agent.view, data.patch);
            agent.seq = data.seq;
            agent.id = ev.id;
            stats.deltas++;
            emit();
          }
        }, both);
      } catch (e) {
        if (stop.signal.aborted) return;
      }
      agent.connected = false;
      stats.reconnects++;
      await new Promise((r) => setTimeout(r, retry));
    }
  })();
  return agent;
}
