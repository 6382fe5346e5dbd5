package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/moora-go/moora/automata/llm"
)

// Models are the team's models: each agent answers with its own.
type Models struct {
	Planner, Researcher, Writer llm.Model
}

// Offline is the team on the scripted model (llm.Scripted): deterministic,
// no key, no network. The planner splits a request into "Find the facts
// for: REQUEST" and "Write the answer to: REQUEST"; the researcher answers
// its task with findings that name it; the writer writes an answer that
// quotes the findings it was given.
func Offline() Models {
	return Models{
		Planner: llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
			request := lastUser(req)
			args, err := json.Marshal(splitArgs{
				Research: "Find the facts for: " + request,
				Writing:  "Write the answer to: " + request,
			})
			if err != nil {
				return llm.Response{}, err
			}
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "split", Name: splitTool, Arguments: args}}}, nil
		}},
		Researcher: llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
			task := strings.TrimPrefix(lastUser(req), "Find the facts for: ")
			return llm.Response{Text: fmt.Sprintf("the researcher's findings on %q: three facts, each with its source", task)}, nil
		}},
		Writer: llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
			task, findings, _ := strings.Cut(lastUser(req), findingsHeader)
			task = strings.TrimPrefix(task, "Write the answer to: ")
			return llm.Response{Text: fmt.Sprintf("The writer's answer to %q, written from %s.", task, findings)}, nil
		}},
	}
}

// One is the team on one model for all three agents (a real one, from the
// environment).
func One(m llm.Model) Models { return Models{Planner: m, Researcher: m, Writer: m} }

func lastUser(req llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

const (
	splitTool     = "split_request"
	plannerPrompt = "You lead a team of a researcher and a writer. Split the user's request into a research task " +
		"(what to find out) and a writing task (what to write from the findings), and record them with the " + splitTool + " tool."
	researcherPrompt = "You are a researcher. Answer the task with concise findings: facts, each with where it comes from."
	writerPrompt     = "You are a writer. Write what the task asks, from the researcher's findings that follow it; be brief."
	findingsHeader   = "\n\nThe researcher's findings:\n"
)

// splitArgs are the arguments of the planner's split tool.
type splitArgs struct {
	Research string `json:"research"`
	Writing  string `json:"writing"`
}

// Split asks the planner's model for the two tasks of request.
func Split(ctx context.Context, m llm.Model, key, request string) (splitArgs, error) {
	resp, err := m.Complete(ctx, llm.Request{
		System:   plannerPrompt,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: request}},
		Tools: []llm.Tool{{Name: splitTool, Description: "Records the research task and the writing task of the request.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"research":{"type":"string","minLength":1},"writing":{"type":"string","minLength":1}},"required":["research","writing"],"additionalProperties":false}`)}},
		RequiredTool:   splitTool,
		IdempotencyKey: key,
	}, nil)
	if err != nil {
		return splitArgs{}, fmt.Errorf("asking the planner's model: %w", err)
	}
	var args splitArgs
	if len(resp.ToolCalls) != 1 || json.Unmarshal(resp.ToolCalls[0].Arguments, &args) != nil || args.Research == "" || args.Writing == "" {
		return splitArgs{}, errors.New("the planner's model did not call " + splitTool + " with both tasks")
	}
	return args, nil
}

// Answer asks a worker's model, with its system prompt, for its answer to
// message.
func Answer(ctx context.Context, m llm.Model, key, system, message string) (string, error) {
	resp, err := m.Complete(ctx, llm.Request{
		System:         system,
		Messages:       []llm.Message{{Role: llm.RoleUser, Content: message}},
		IdempotencyKey: key,
	}, nil)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(resp.Text) == "" {
		return "", errors.New("the model answered nothing")
	}
	return resp.Text, nil
}
