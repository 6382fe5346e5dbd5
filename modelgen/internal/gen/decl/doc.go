// Package decl prints the decl/ package of an agent from its model: the
// actors, the $defs and inline types, observations, states, contexts,
// inputs with their JSON codec and DecodeInput, the input schema, the
// per-actor function types, and AgentState with its projections. It is a
// printer: every identifier comes from the model.
package decl
