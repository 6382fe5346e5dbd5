package openai

import "github.com/moora-go/moora/automata/llm"

var _ llm.Named = (*Model)(nil)

// ProviderName returns "openai", the name the OpenTelemetry GenAI semantic
// conventions give OpenAI's API, for llm.Traced. It is the same for every
// server that speaks the API (llama.cpp, vLLM, Ollama): the conventions
// name the flavour of the API, and the model's name tells the rest.
func (m *Model) ProviderName() string { return "openai" }

// ModelName returns the name of the model, as Config or $OPENAI_MODEL
// named it, for llm.Traced.
func (m *Model) ModelName() string { return m.model }
