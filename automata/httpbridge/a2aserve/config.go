package a2aserve

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"
)

// Status is what a task is at a view of its agent: Config.Task's answer.
type Status struct {
	// State is the task's state: StateWorking while the agent works on
	// what it was sent, StateInputRequired when its state waits for the
	// user, a terminal state when it takes no more messages.
	State TaskState
	// Message is the agent's message about it (what it asks, when
	// StateInputRequired), or nil. Its Role is RoleAgent.
	Message *Message
	// Artifacts are the task's outputs so far, each by a stable
	// ArtifactID: a stream sends one again when it changes.
	Artifacts []Artifact
	// History is the conversation, oldest first (GetTask's historyLength
	// keeps its newest).
	History []Message
}

// Config configures the A2A front of an agent. Schema and Task are
// required; a zero limit is its default.
type Config[I, V any] struct {
	// Schema is the agent's input schema document, decl.InputSchema():
	// the card's skills are its client actors' inputs, described as the
	// spec does, and the default Input fills the chat-shaped one.
	Schema []byte
	// Name, Description and Version are the card's (the spec has none of
	// its own). Default "agent", a sentence listing the skills, "1".
	Name, Description, Version string
	// URL is the card's URL of the JSON-RPC endpoint, for a server behind
	// a proxy that changes the path or the scheme. Default: the URL the
	// card was asked for, less CardPath (http, or https over TLS).
	URL string

	// Input makes the agent's input of a client's message. Default: the
	// one input of the client actors whose schema has a required string
	// property "content" or "text" (a chat message: the message's text),
	// with "messageId" or "id", when it has one, the message's id.
	Input func(m Message) (I, error)
	// Task says what the task is at view v (httpbridge.Config.View's).
	Task func(v V) Status

	// MaxParts bounds the parts of a message (default 32), MaxTextBytes
	// their text (default 100,000 bytes) and MaxIDBytes each id a client
	// names (messageId, taskId, contextId; default 128).
	MaxParts, MaxTextBytes, MaxIDBytes int
	// MaxHistory bounds the messages of a task's history sent (default
	// 100); a client's historyLength takes fewer.
	MaxHistory int
	// MaxStreams bounds the streams open at once across the agents the
	// front serves: beyond, a stream is refused with 503 and Retry-After
	// (default 1,000).
	MaxStreams int
	// MaxStreamTime bounds how long a stream lasts (default 30 minutes):
	// a client follows the task further with SubscribeToTask.
	MaxStreamTime time.Duration
	// WriteTimeout bounds each write of a stream's events (default 10 s):
	// a client that does not take its bytes loses the stream.
	WriteTimeout time.Duration
	// MaxWait bounds how long SendMessage waits for the task to stop
	// working (default 5 minutes): then it answers the task as it is.
	MaxWait time.Duration
	// Logger receives what goes wrong. Default slog.Default().
	Logger *slog.Logger
}

// The defaults of Config.
const (
	DefaultMaxParts      = 32
	DefaultMaxTextBytes  = 100_000
	DefaultMaxIDBytes    = 128
	DefaultMaxHistory    = 100
	DefaultMaxStreams    = 1000
	DefaultMaxStreamTime = 30 * time.Minute
	DefaultWriteTimeout  = 10 * time.Second
	DefaultMaxWait       = 5 * time.Minute
)

func (c *Config[I, V]) withDefaults() error {
	switch {
	case len(c.Schema) == 0:
		return errors.New("a2aserve: Config.Schema is required: decl.InputSchema()")
	case c.Task == nil:
		return errors.New("a2aserve: Config.Task is required: what a task is at a view of the agent")
	case c.MaxParts < 0 || c.MaxTextBytes < 0 || c.MaxIDBytes < 0 || c.MaxHistory < 0 || c.MaxStreams < 0 ||
		c.MaxStreamTime < 0 || c.WriteTimeout < 0 || c.MaxWait < 0:
		return errors.New("a2aserve: a limit of Config is negative")
	}
	c.Name = or(c.Name, "agent")
	c.Version = or(c.Version, "1")
	c.MaxParts = or(c.MaxParts, DefaultMaxParts)
	c.MaxTextBytes = or(c.MaxTextBytes, DefaultMaxTextBytes)
	c.MaxIDBytes = or(c.MaxIDBytes, DefaultMaxIDBytes)
	c.MaxHistory = or(c.MaxHistory, DefaultMaxHistory)
	c.MaxStreams = or(c.MaxStreams, DefaultMaxStreams)
	c.MaxStreamTime = or(c.MaxStreamTime, DefaultMaxStreamTime)
	c.WriteTimeout = or(c.WriteTimeout, DefaultWriteTimeout)
	c.MaxWait = or(c.MaxWait, DefaultMaxWait)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// inputDoc is one input of the schema document.
type inputDoc struct {
	name, actor, description string
	text, id                 string // the chat-shaped input's properties, or ""
}

// maxSchemaBytes bounds the schema document read (the program's own).
const maxSchemaBytes = 16 << 20

// readSchema reads the inputs of the schema document agentgen generates,
// by name.
func readSchema(data []byte) ([]inputDoc, error) {
	if len(data) > maxSchemaBytes {
		return nil, fmt.Errorf("the input schema is %d bytes, over %d", len(data), maxSchemaBytes)
	}
	var doc struct {
		Inputs map[string]struct {
			Description string `json:"description"`
			Properties  map[string]struct {
				Type     any  `json:"type"`
				ReadOnly bool `json:"readOnly"`
			} `json:"properties"`
			Required []string `json:"required"`
		} `json:"inputs"`
		Actors map[string][]string `json:"actors"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the input schema is not JSON: %v", err)
	}
	if len(doc.Inputs) == 0 {
		return nil, errors.New(`the input schema has no inputs under "inputs": want decl.InputSchema()`)
	}
	actorOf := map[string]string{}
	for actor, names := range doc.Actors {
		for _, n := range names {
			actorOf[n] = actor
		}
	}
	var out []inputDoc
	for name, in := range doc.Inputs {
		d := inputDoc{name: name, actor: actorOf[name], description: in.Description}
		for _, p := range []string{"content", "text"} {
			if pr, ok := in.Properties[p]; ok && pr.Type == "string" && !pr.ReadOnly && slices.Contains(in.Required, p) {
				d.text = p
				break
			}
		}
		for _, p := range []string{"messageId", "id"} {
			if pr, ok := in.Properties[p]; ok && pr.Type == "string" && !pr.ReadOnly {
				d.id = p
				break
			}
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// clientInputs are the inputs of actors (["*"]: all).
func clientInputs(all []inputDoc, actors []string) []inputDoc {
	var out []inputDoc
	for _, in := range all {
		if slices.Contains(actors, "*") || slices.Contains(actors, in.actor) {
			out = append(out, in)
		}
	}
	return out
}

// defaultInput is the default Config.Input: the chat-shaped input of ins,
// decoded with decode (the bridge's).
func defaultInput[I any](ins []inputDoc, decode func([]byte) (I, error)) (func(Message) (I, error), error) {
	var chat []inputDoc
	for _, in := range ins {
		if in.text != "" {
			chat = append(chat, in)
		}
	}
	if len(chat) != 1 {
		return nil, fmt.Errorf("a2aserve: %d inputs of the client actors have a required string property content or text, and the default Config.Input wants one: give Config.Input", len(chat))
	}
	in := chat[0]
	return func(m Message) (I, error) {
		obj := map[string]string{"type": in.name, in.text: m.Text()}
		if in.id != "" {
			obj[in.id] = m.MessageID
		}
		data, _ := json.Marshal(obj)
		return decode(data)
	}, nil
}
