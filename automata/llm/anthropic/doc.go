// Package anthropic is the llm.Model of Anthropic's Messages API.
package anthropic
