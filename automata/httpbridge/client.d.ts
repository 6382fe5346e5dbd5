// The types of client.js, the browser client of a moora httpbridge, generic
// over the types agentgen generates from the agent's spec (typescript:
// web/agent.ts): the view is the projection the bridge serves (Config.View,
// often a ContextOfX), and the input is what its client actors post (the
// ClientInputFromX union, without the readOnly properties the server
// assigns).
//
//   import { connect } from "./client.js";
//   import type { ContextOfUser, ClientInputFromUser } from "./agent";
//   const agent = connect<ContextOfUser, ClientInputFromUser>("/agent");
//   agent.onState((view) => render(view.userMessages));
//   await agent.post({ type: "user-send-message", messageId: "u1", content: "hi" });

/** Options of connect. */
export interface ConnectOptions {
  /** A bearer token, sent as Authorization on every request. */
  token?: string;
  /** Milliseconds between reconnects; 500 by default. */
  retry?: number;
}

/** What the client counted on its state stream. */
export interface Stats {
  snapshots: number;
  resyncs: number;
  deltas: number;
  gaps: number;
  reconnects: number;
}

/** The bridge's answer to a POST of an input: where it was applied. */
export interface Posted {
  seq: number;
}

/** The Error a refused POST throws: the bridge's message and status. */
export interface PostError extends Error {
  status: number;
}

/** An operation of a JSON Patch, as the bridge writes them. */
export type PatchOperation =
  | { op: "add"; path: string; value: unknown }
  | { op: "replace"; path: string; value: unknown }
  | { op: "remove"; path: string };

/** The agent a connect follows. */
export interface Agent<View, Input> {
  /** The projection of the state, as JSON; undefined before the first snapshot. */
  readonly view: View | undefined;
  /** The sequence number the view is at. */
  readonly seq: number | undefined;
  /** The id of the last event applied. */
  readonly id: string;
  /** The state stream is open and the view up to date as of then. */
  readonly connected: boolean;
  readonly stats: Stats;
  /** Calls fn with each view (at once, when there is one); returns a function that stops. */
  onState(fn: (view: View, seq: number) => void): () => boolean;
  /** Sends an input; resolves to the bridge's answer or throws a PostError. */
  post(input: Input, options?: { idempotencyKey?: string }): Promise<Posted>;
  /** Resolves once the view has reached seq (a POST's answer). */
  until(seq: number): Promise<View>;
  /**
   * Reads a token stream: fn gets the text so far after each chunk, and
   * done with the whole text at the end, or with the reason a stream that
   * failed gives. Returns a function that stops.
   */
  follow(name: string, fn: (text: string, done: boolean, reason?: string) => void): () => void;
  /** Stops following the state. */
  close(): void;
}

/**
 * Follows the agent served by the bridge at base (a URL path or URL,
 * without the trailing slash: "/agent", "/agents/report-19").
 */
export function connect<View = unknown, Input = unknown>(base: string, options?: ConnectOptions): Agent<View, Input>;

/** Applies the operations of a JSON Patch to doc and returns the result. */
export function applyPatch<T>(doc: T, patch: PatchOperation[]): T;
