// Package gemini is the llm.Model of the Gemini API, on Google's official
// Go SDK (google.golang.org/genai), with the same interface, limits and
// errors as package automata/llm/openai.
package gemini
