// Package llmenv chooses the model of a program from its environment: one
// of the providers of this module, or the program's offline model. It is
// how the examples choose, and a program of your own may do the same:
//
//	model, err := llmenv.FromEnv(offlineModel)
//
// The variables, which the README's table lists too:
//
//	LLM_PROVIDER        openai, anthropic, or offline; unset, OPENAI_MODEL chooses (as before this package)
//	OPENAI_MODEL        the OpenAI provider's model, such as gpt-4o-mini; set without LLM_PROVIDER, it chooses OpenAI
//	OPENAI_API_KEY      its key (OpenAI's API needs one; a local server may not)
//	OPENAI_BASE_URL     its API's root, up to /v1 (default https://api.openai.com/v1/)
//	ANTHROPIC_MODEL     the Anthropic provider's model, such as claude-sonnet-4-5 (required with LLM_PROVIDER=anthropic)
//	ANTHROPIC_API_KEY   its key (Anthropic's API needs one; a gateway on this machine may not)
//	ANTHROPIC_BASE_URL  its API's root, without /v1 (default https://api.anthropic.com/)
//
// Anthropic is chosen by LLM_PROVIDER=anthropic alone, never by the
// presence of ANTHROPIC_API_KEY or ANTHROPIC_MODEL, which many machines set
// for other tools: a program that ran offline goes on running offline
// until it is told otherwise, and its tests with it.
//
// Packages automata/llm/openai and automata/llm/anthropic say the rest of
// each provider's configuration.
package llmenv

import (
	"fmt"
	"os"
	"strings"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/anthropic"
	"github.com/moora-go/moora/automata/llm/openai"
)

// EnvProvider names the provider: openai, anthropic or offline.
const EnvProvider = "LLM_PROVIDER"

// The providers EnvProvider may name.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
	Offline   = "offline"
)

// Provider returns the provider the environment chooses: EnvProvider's,
// lower-cased, if set; else OpenAI if $OPENAI_MODEL is set; else Offline.
func Provider() string {
	if p := strings.ToLower(strings.TrimSpace(os.Getenv(EnvProvider))); p != "" {
		return p
	}
	if os.Getenv(openai.EnvModel) != "" {
		return OpenAI
	}
	return Offline
}

// ModelVariable returns the variable that names the model of the provider
// the environment chooses (OPENAI_MODEL for OpenAI and offline, whose
// setting chooses OpenAI), for a program's -model flag to set.
func ModelVariable() string {
	if Provider() == Anthropic {
		return anthropic.EnvModel
	}
	return openai.EnvModel
}

// FromEnv returns the model the environment chooses (see Provider),
// configured from the environment alone, or offline. It fails for an
// EnvProvider it does not know, and as the provider's New does: no model
// named, no key for the vendor's API.
func FromEnv(offline llm.Model) (llm.Model, error) {
	switch p := Provider(); p {
	case Offline:
		return offline, nil
	case OpenAI:
		m, err := openai.New(openai.Config{})
		if err != nil {
			return nil, err
		}
		return m, nil
	case Anthropic:
		m, err := anthropic.New(anthropic.Config{})
		if err != nil {
			return nil, err
		}
		return m, nil
	default:
		return nil, fmt.Errorf("llmenv: %s=%q is none of %s, %s, %s", EnvProvider, os.Getenv(EnvProvider), OpenAI, Anthropic, Offline)
	}
}
