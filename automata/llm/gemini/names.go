package gemini

import "github.com/moora-go/moora/automata/llm"

var _ llm.Named = (*Model)(nil)

// ProviderName returns "gcp.gemini", the name the OpenTelemetry GenAI
// semantic conventions give the Gemini API, for llm.Traced.
func (m *Model) ProviderName() string { return "gcp.gemini" }

// ModelName returns the name of the model, as Config or $GEMINI_MODEL
// named it, for llm.Traced.
func (m *Model) ModelName() string { return m.model }
