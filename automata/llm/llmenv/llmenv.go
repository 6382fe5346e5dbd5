// Package llmenv chooses the model of a program from its environment: one
// of the providers of this module, or the program's offline model. It is
// how the examples choose, and a program of your own may do the same:
//
//	model, err := llmenv.FromEnv(offlineModel)
//
// The variables, which the README's table lists too:
//
//	LLM_PROVIDER        openai, anthropic, gemini, or offline; unset, OPENAI_MODEL chooses (as before this package)
//	OPENAI_MODEL        the OpenAI provider's model, such as gpt-4o-mini; set without LLM_PROVIDER, it chooses OpenAI
//	OPENAI_API_KEY      its key (OpenAI's API needs one; a local server may not)
//	OPENAI_BASE_URL     its API's root, up to /v1 (default https://api.openai.com/v1/)
//	ANTHROPIC_MODEL     the Anthropic provider's model, such as claude-sonnet-4-5 (required with LLM_PROVIDER=anthropic)
//	ANTHROPIC_API_KEY   its key (Anthropic's API needs one; a gateway on this machine may not)
//	ANTHROPIC_BASE_URL  its API's root, without /v1 (default https://api.anthropic.com/)
//	GEMINI_MODEL        the Gemini provider's model, such as gemini-2.5-flash (required with LLM_PROVIDER=gemini)
//	GEMINI_API_KEY      its key, or GOOGLE_API_KEY, which wins when both are set, as Google's SDK documents (the Gemini API needs one; a server on this machine may not)
//	GEMINI_BASE_URL     its API's root, without /v1beta (default https://generativelanguage.googleapis.com/; else the SDK's GOOGLE_GEMINI_BASE_URL)
//
// Anthropic and Gemini are chosen by LLM_PROVIDER alone, never by the
// presence of their keys or model variables, which many machines set for
// other tools: a program that ran offline goes on running offline until it
// is told otherwise, and its tests with it.
//
// Packages automata/llm/openai, automata/llm/anthropic and
// automata/llm/gemini say the rest of each provider's configuration.
package llmenv

import (
	"fmt"
	"os"
	"strings"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/anthropic"
	"github.com/moora-go/moora/automata/llm/gemini"
	"github.com/moora-go/moora/automata/llm/openai"
)

// EnvProvider names the provider: openai, anthropic, gemini or offline.
const EnvProvider = "LLM_PROVIDER"

// The providers EnvProvider may name.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
	Gemini    = "gemini"
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
	switch Provider() {
	case Anthropic:
		return anthropic.EnvModel
	case Gemini:
		return gemini.EnvModel
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
	case Gemini:
		m, err := gemini.New(gemini.Config{})
		if err != nil {
			return nil, err
		}
		return m, nil
	default:
		return nil, fmt.Errorf("llmenv: %s=%q is none of %s, %s, %s, %s", EnvProvider, os.Getenv(EnvProvider), OpenAI, Anthropic, Gemini, Offline)
	}
}
