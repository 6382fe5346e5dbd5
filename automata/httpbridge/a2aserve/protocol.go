package a2aserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// ProtocolVersion is the version of the A2A protocol this package speaks,
// as an agent card's interface and the A2A-Version header name it.
const ProtocolVersion = "1.0"

// CardPath is where an agent card is served, under the front's path.
const CardPath = "/.well-known/agent-card.json"

// TaskState is the state of a task, as the protocol's JSON names it.
type TaskState string

// The states of a task.
const (
	StateSubmitted     TaskState = "TASK_STATE_SUBMITTED"
	StateWorking       TaskState = "TASK_STATE_WORKING"
	StateInputRequired TaskState = "TASK_STATE_INPUT_REQUIRED"
	StateAuthRequired  TaskState = "TASK_STATE_AUTH_REQUIRED"
	StateCompleted     TaskState = "TASK_STATE_COMPLETED"
	StateFailed        TaskState = "TASK_STATE_FAILED"
	StateCanceled      TaskState = "TASK_STATE_CANCELED"
	StateRejected      TaskState = "TASK_STATE_REJECTED"
)

// Terminal says whether a task in state s takes no more messages.
func (s TaskState) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCanceled || s == StateRejected
}

// Interrupted says whether a task in state s waits for its client: a
// stream of it ends there, as at a terminal state.
func (s TaskState) Interrupted() bool { return s == StateInputRequired || s == StateAuthRequired }

// Roles of a message.
const (
	RoleUser  = "ROLE_USER"
	RoleAgent = "ROLE_AGENT"
)

// Part is a part of a message or an artifact: text, data (JSON), a URL or
// raw bytes (base64 in JSON), one of them.
type Part struct {
	Text      string          `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// Message is a message of a client (RoleUser) or of the agent (RoleAgent).
type Message struct {
	MessageID        string          `json:"messageId"`
	ContextID        string          `json:"contextId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	Role             string          `json:"role"`
	Parts            []Part          `json:"parts"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
}

// Text is the text of m's text parts, one after the other, a newline
// between two.
func (m Message) Text() string {
	var b bytes.Buffer
	for _, p := range m.Parts {
		if p.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string          `json:"artifactId"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parts       []Part          `json:"parts"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// TaskStatus is a task's state, with the agent's message about it.
type TaskStatus struct {
	State     TaskState `json:"state"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// Task is a task as the protocol sends it.
type Task struct {
	ID        string          `json:"id"`
	ContextID string          `json:"contextId"`
	Status    TaskStatus      `json:"status"`
	Artifacts []Artifact      `json:"artifacts,omitempty"`
	History   []Message       `json:"history,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// StatusUpdate is a TaskStatusUpdateEvent.
type StatusUpdate struct {
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
}

// ArtifactUpdate is a TaskArtifactUpdateEvent.
type ArtifactUpdate struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
}

// StreamResponse is one event of a stream (and, with Task or Message
// only, the result of SendMessage).
type StreamResponse struct {
	Task           *Task           `json:"task,omitempty"`
	Message        *Message        `json:"message,omitempty"`
	StatusUpdate   *StatusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *ArtifactUpdate `json:"artifactUpdate,omitempty"`
}

// AgentCard is what an agent says of itself, at CardPath.
type AgentCard struct {
	Name                string           `json:"name"`
	Description         string           `json:"description"`
	SupportedInterfaces []AgentInterface `json:"supportedInterfaces"`
	Version             string           `json:"version"`
	Capabilities        Capabilities     `json:"capabilities"`
	DefaultInputModes   []string         `json:"defaultInputModes"`
	DefaultOutputModes  []string         `json:"defaultOutputModes"`
	Skills              []Skill          `json:"skills"`
}

// AgentInterface is where and how an agent is reached.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// Capabilities are the optional parts of the protocol an agent serves.
type Capabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
}

// Skill is one thing an agent does: here, one input of its client actors.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// JSON-RPC's error codes, and the protocol's own.
const (
	CodeParseError          = -32700
	CodeInvalidRequest      = -32600
	CodeMethodNotFound      = -32601
	CodeInvalidParams       = -32602
	CodeInternal            = -32603
	CodeTaskNotFound        = -32001
	CodeTaskNotCancelable   = -32002
	CodePushNotSupported    = -32003
	CodeUnsupported         = -32004
	CodeContentType         = -32005
	CodeExtendedCardMissing = -32007
	CodeVersionNotSupported = -32009
)

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// status is the HTTP status of the answer (0: 200), and retry says
	// to send it again later (Retry-After).
	status int
	retry  bool
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

func errorf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// request is a JSON-RPC request, read by parseRequest.
type request struct {
	ID     json.RawMessage // a string or a number
	Method string
	Params json.RawMessage // an object, or absent
}

// maxIDBytes bounds a request's id, as its JSON.
const maxIDBytes = 256

// parseRequest reads a JSON-RPC 2.0 request. Its error is the answer:
// -32700 for what is not JSON, -32600 for JSON that is not one request
// (a batch, a notification, no method, the wrong version), -32602 for
// params that are not an object; id is the request's id when it could be
// read, for the answer to carry.
func parseRequest(data []byte) (req request, err *rpcError) {
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		return req, errorf(CodeParseError, "parse error: the body is not JSON")
	}
	if len(data) > 0 && data[0] == '[' {
		return req, errorf(CodeInvalidRequest, "invalid request: batches are not supported; send one request a POST")
	}
	var raw struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if e := json.Unmarshal(data, &raw); e != nil {
		return req, errorf(CodeInvalidRequest, "invalid request: want a JSON-RPC request object")
	}
	switch id := bytes.TrimSpace(raw.ID); {
	case len(id) == 0 || string(id) == "null":
		return req, errorf(CodeInvalidRequest, `invalid request: "id" is required (a string or a number): notifications are not served`)
	case len(id) > maxIDBytes:
		return req, errorf(CodeInvalidRequest, `invalid request: "id" is %d bytes, over %d`, len(id), maxIDBytes)
	case id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9'):
		req.ID = id
	default:
		return req, errorf(CodeInvalidRequest, `invalid request: "id" must be a string or a number`)
	}
	if raw.JSONRPC == nil || *raw.JSONRPC != "2.0" {
		return req, errorf(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	if raw.Method == nil || *raw.Method == "" {
		return req, errorf(CodeInvalidRequest, `invalid request: "method" is required`)
	}
	req.Method = *raw.Method
	if !utf8.ValidString(req.Method) || len(req.Method) > 128 {
		return req, errorf(CodeMethodNotFound, "method not found")
	}
	if p := bytes.TrimSpace(raw.Params); len(p) > 0 && string(p) != "null" {
		if p[0] != '{' {
			return req, errorf(CodeInvalidParams, `invalid params: "params" must be an object`)
		}
		req.Params = p
	}
	return req, nil
}

// response encodes a JSON-RPC answer to id: result, or err.
func response(id json.RawMessage, result any, err *rpcError) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	var out struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *rpcError       `json:"error,omitempty"`
	}
	out.JSONRPC, out.ID = "2.0", id
	if err != nil {
		out.Error = err
	} else {
		out.Result = result
	}
	data, e := json.Marshal(out)
	if e != nil {
		data, _ = json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *rpcError       `json:"error"`
		}{"2.0", id, errorf(CodeInternal, "internal error: encoding the result: %v", e)})
	}
	return data
}
