package anthropic

import "github.com/moora-go/moora/automata/llm"

var _ llm.Named = (*Model)(nil)

// ProviderName returns "anthropic", the name the OpenTelemetry GenAI
// semantic conventions give Anthropic's API, for llm.Traced.
func (m *Model) ProviderName() string { return "anthropic" }

// ModelName returns the name of the model, as Config or $ANTHROPIC_MODEL
// named it, for llm.Traced.
func (m *Model) ModelName() string { return m.model }
