// A program that uses every kind of type the TypeScript of a spec has:
// TestTypeScriptCompiles type-checks it with tsc --strict against the
// generated modules, and fails when a spec change breaks it.
import * as oneof from "../oneof/agent";
import * as nullable from "../optional-nullable/agent";
import * as three from "../three-actors/agent";
import * as maps from "../maps/agent";

// A oneOf: narrowed by its discriminator.
export function area(s: oneof.Shape): number {
  switch (s.kind) {
    case "circle":
      return Math.PI * s.radius * s.radius;
    case "square":
      return s.side * s.side;
    case "group":
      return s.children.reduce((sum, c) => sum + area(c), 0);
  }
}

// Required, optional and nullable properties; an enum.
export function describe(p: nullable.Profile): string {
  const age = p.age === null ? "unknown" : String(p.age);
  const nick: string = p.nickname ?? p.name;
  const mood: nullable.Mood | undefined = p.mood;
  const scores: number[] = p.scores.filter((x): x is number => x !== null);
  return `${nick} (${age}, ${mood ?? "calm"}) ${p.tags.join(",")} ${scores.length} ${p.home.x}`;
}

// Maps as records.
export function total(state: maps.UserObTool, c: maps.Counters): number {
  let n = 0;
  for (const t of Object.values(state.tools)) {
    n += Object.keys(t.args).length + Object.values(t.limits ?? {}).reduce((a, b) => a + b, 0);
  }
  return n + Object.values(c).reduce((a, b) => a + b, 0);
}

// An input a client posts leaves out what the server assigns; the input
// the server journals has it.
export const prompt: three.ClientSendPrompt = { type: "send-prompt", prompt: "hello" };
export const journaled: three.SendPrompt = { ...prompt, timestamp: 1 };
export const posted: three.ClientInputFromUser = prompt;
export const anyInput: three.AgentInput = journaled;

// The names as constants.
export const userInputs: readonly string[] = three.inputs.user;
export const firstActor: three.Actor = three.actors[0];
export const version: number = three.specVersion;

// The state as the bridge shows it.
export function tasks(s: three.AgentState): three.TaskStatus[] {
  return s.tasks.map((t) => t.status);
}
