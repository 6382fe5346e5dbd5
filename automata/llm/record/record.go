// Package record records a model's calls and plays them back, so that a
// test runs a conversation that a real provider had, offline, byte for
// byte: a Recorder wraps any llm.Model and writes each call — the request,
// the text chunks as they streamed, the response — to a file of a
// directory, named by the call's idempotency key (in an agent, the job's
// key, the same after a restart); a Player answers each call from the file
// of its key, streaming the same chunks in the same order, and refuses a
// call that it has no file for or whose request is not the one recorded.
//
//	// Once, against the real model (say, with an -update flag):
//	model = record.New(openai.New(cfg), "testdata/conversation")
//	// In the test, with no network:
//	model = record.Player{Dir: "testdata/conversation"}
//
// Commit the directory: its files are JSON, one a call, indented so that a
// diff of a recording made again reads. A call that failed is not written
// (its error is not a reply to play back): the Recorder returns it as it
// came. A key that two calls of one recording share keeps the last.
//
// An image of a request is recorded as its media type, its size and the
// SHA-256 of its bytes, not the bytes: each call of a conversation sends
// again every image before it, which would make a recording of a few
// screenshots megabytes in every file. A Player matches an image by those
// three, so that other bytes, or another type, are a request that is not
// the one recorded; the Request of a Call that Decode returns has its
// images' media types, without their Data.
package record

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/moora-go/moora/automata/llm"
)

// Call is a recorded call.
type Call struct {
	Request  llm.Request
	Chunks   []string
	Response llm.Response
}

// file is a Call as a file holds it: JSON, with the JSON a model or a tool
// wrote (a call's arguments, a tool's parameters) kept as strings, byte for
// byte (encoding/json would compact them).
type file struct {
	Request  fileRequest  `json:"request"`
	Chunks   []string     `json:"chunks"`
	Response fileResponse `json:"response"`
}

type fileRequest struct {
	System         string        `json:"system,omitempty"`
	Messages       []fileMessage `json:"messages"`
	Tools          []fileTool    `json:"tools,omitempty"`
	RequiredTool   string        `json:"requiredTool,omitempty"`
	IdempotencyKey string        `json:"idempotencyKey"`
	ResponseFormat *fileFormat   `json:"responseFormat,omitempty"`
}

type fileFormat struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Schema      string `json:"schema"`
	Strict      bool   `json:"strict,omitempty"`
}

type fileMessage struct {
	Role       llm.Role       `json:"role"`
	Content    string         `json:"content,omitempty"`
	Images     []fileImage    `json:"images,omitempty"`
	ToolCalls  []fileToolCall `json:"toolCalls,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
}

// fileImage is an image as a file holds it: not its bytes, but their
// media type, size and SHA-256 (see the package documentation).
type fileImage struct {
	MediaType string `json:"mediaType"`
	Bytes     int    `json:"bytes"`
	SHA256    string `json:"sha256"`
}

func toFileImages(images []llm.Image) []fileImage {
	var out []fileImage
	for _, im := range images {
		sum := sha256.Sum256(im.Data)
		out = append(out, fileImage{MediaType: im.MediaType, Bytes: len(im.Data), SHA256: hex.EncodeToString(sum[:])})
	}
	return out
}

type fileTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  string `json:"parameters,omitempty"`
}

type fileToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type fileResponse struct {
	Text         string           `json:"text"`
	ToolCalls    []fileToolCall   `json:"toolCalls,omitempty"`
	FinishReason llm.FinishReason `json:"finishReason,omitempty"`
	Usage        llm.Usage        `json:"usage"`
}

func toFile(c Call) file {
	calls := func(cs []llm.ToolCall) []fileToolCall {
		var out []fileToolCall
		for _, c := range cs {
			out = append(out, fileToolCall{c.ID, c.Name, string(c.Arguments)})
		}
		return out
	}
	f := file{Chunks: c.Chunks, Response: fileResponse{Text: c.Response.Text, ToolCalls: calls(c.Response.ToolCalls), FinishReason: c.Response.FinishReason, Usage: c.Response.Usage}}
	r := c.Request
	f.Request = fileRequest{System: r.System, RequiredTool: r.RequiredTool, IdempotencyKey: r.IdempotencyKey, Messages: []fileMessage{}}
	for _, m := range r.Messages {
		f.Request.Messages = append(f.Request.Messages, fileMessage{m.Role, m.Content, toFileImages(m.Images), calls(m.ToolCalls), m.ToolCallID})
	}
	for _, t := range r.Tools {
		f.Request.Tools = append(f.Request.Tools, fileTool{t.Name, t.Description, string(t.Parameters)})
	}
	if rf := r.ResponseFormat; rf != nil {
		f.Request.ResponseFormat = &fileFormat{rf.Name, rf.Description, string(rf.Schema), rf.Strict}
	}
	if f.Chunks == nil {
		f.Chunks = []string{}
	}
	return f
}

func fromFile(f file) Call {
	calls := func(cs []fileToolCall) []llm.ToolCall {
		var out []llm.ToolCall
		for _, c := range cs {
			out = append(out, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(c.Arguments)})
		}
		return out
	}
	c := Call{Chunks: f.Chunks, Response: llm.Response{Text: f.Response.Text, ToolCalls: calls(f.Response.ToolCalls), FinishReason: f.Response.FinishReason, Usage: f.Response.Usage}}
	r := f.Request
	c.Request = llm.Request{System: r.System, RequiredTool: r.RequiredTool, IdempotencyKey: r.IdempotencyKey}
	for _, m := range r.Messages {
		msg := llm.Message{Role: m.Role, Content: m.Content, ToolCalls: calls(m.ToolCalls), ToolCallID: m.ToolCallID}
		for _, im := range m.Images {
			msg.Images = append(msg.Images, llm.Image{MediaType: im.MediaType}) // the bytes are not recorded
		}
		c.Request.Messages = append(c.Request.Messages, msg)
	}
	for _, t := range r.Tools {
		tool := llm.Tool{Name: t.Name, Description: t.Description}
		if t.Parameters != "" {
			tool.Parameters = json.RawMessage(t.Parameters)
		}
		c.Request.Tools = append(c.Request.Tools, tool)
	}
	if rf := r.ResponseFormat; rf != nil {
		c.Request.ResponseFormat = &llm.JSONSchema{Name: rf.Name, Description: rf.Description, Schema: json.RawMessage(rf.Schema), Strict: rf.Strict}
	}
	return c
}

// Recorder is a model that records the calls of another: see the package
// documentation.
type Recorder struct {
	model llm.Model
	dir   string
	mu    sync.Mutex
}

// New returns a Recorder of model's calls into dir, which it creates if need
// be.
func New(model llm.Model, dir string) *Recorder { return &Recorder{model: model, dir: dir} }

// SupportsResponseFormat says what the model it records says (see
// llm.ResponseFormatter).
func (r *Recorder) SupportsResponseFormat() bool { return llm.SupportsResponseFormat(r.model) }

// Complete calls the model, streams its chunks to onChunk as they come, and
// writes the call to the file of req's idempotency key. A call without a
// key is refused: it could not be found again.
func (r *Recorder) Complete(ctx context.Context, req llm.Request, onChunk func(string)) (llm.Response, error) {
	name, err := FileName(req.IdempotencyKey)
	if err != nil {
		return llm.Response{}, err
	}
	var chunks []string
	resp, err := r.model.Complete(ctx, req, func(text string) {
		chunks = append(chunks, text)
		if onChunk != nil {
			onChunk(text)
		}
	})
	if err != nil {
		return resp, err
	}
	data, err := json.MarshalIndent(toFile(Call{Request: req, Chunks: chunks, Response: resp}), "", "  ")
	if err != nil {
		return resp, fmt.Errorf("record: encoding the call of %q: %w", req.IdempotencyKey, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return resp, fmt.Errorf("record: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, name), append(data, '\n'), 0o644); err != nil {
		return resp, fmt.Errorf("record: %w", err)
	}
	return resp, nil
}

// FileName is the name of the file of the call with idempotency key key:
// the key, escaped as a URL path segment is (so that a job's key, such as
// brain/ask-brain-17, is one file), then ".json".
func FileName(key string) (string, error) {
	if key == "" {
		return "", errors.New("record: a call without an idempotency key: a recording names each call by its key")
	}
	name := url.PathEscape(key)
	if name == "." || name == ".." || len(name) > 200 {
		return "", fmt.Errorf("record: the key %q makes no file name", key)
	}
	return name + ".json", nil
}

// Player is a model that answers from a recording: see the package
// documentation. The zero value of every field but Dir is its default.
type Player struct {
	// Dir is the recording's directory.
	Dir string
	// AnyRequest plays a call back whatever its request, by its key
	// alone. By default a request that is not the one recorded is an
	// error that says where they differ: the code that makes it changed,
	// and the recording is to be made again.
	AnyRequest bool
	// MaxBytes bounds a file of the recording (default 16 MiB).
	MaxBytes int64
	// ResponseFormat is what the recorded model said of its native mode
	// for llm.Request.ResponseFormat (see llm.ResponseFormatter), which
	// the Player says in its turn, so that a caller that asks a model
	// according to it (package automata/llm/structured) makes the
	// requests it made when recording: set it when the recording's
	// requests carry a responseFormat.
	ResponseFormat bool
}

// SupportsResponseFormat reports p.ResponseFormat.
func (p Player) SupportsResponseFormat() bool { return p.ResponseFormat }

// ErrNotRecorded is wrapped by the error of a call that the recording has
// no file for.
var ErrNotRecorded = errors.New("record: the call is not in the recording")

// Complete answers req from the file of its key: the recorded chunks to
// onChunk, in order, then the recorded response.
func (p Player) Complete(ctx context.Context, req llm.Request, onChunk func(string)) (llm.Response, error) {
	if err := req.Validate(); err != nil {
		return llm.Response{}, fmt.Errorf("record: %w", err)
	}
	name, err := FileName(req.IdempotencyKey)
	if err != nil {
		return llm.Response{}, err
	}
	path := filepath.Join(p.Dir, name)
	f, err := p.read(path)
	if errors.Is(err, os.ErrNotExist) {
		return llm.Response{}, fmt.Errorf("%w: no %s (key %q)", ErrNotRecorded, path, req.IdempotencyKey)
	}
	if err != nil {
		return llm.Response{}, err
	}
	call := fromFile(f)
	if !p.AnyRequest {
		if where := differ(f.Request, toFile(Call{Request: req}).Request); where != "" {
			return llm.Response{}, fmt.Errorf("record: %s: the request is not the one recorded (%s): make the recording again", path, where)
		}
	}
	for _, c := range call.Chunks {
		if err := ctx.Err(); err != nil {
			return llm.Response{}, fmt.Errorf("record: %w", err)
		}
		if onChunk != nil {
			onChunk(c)
		}
	}
	return call.Response, nil
}

// read reads and decodes the file at path, within MaxBytes.
func (p Player) read(path string) (file, error) {
	limit := p.MaxBytes
	if limit <= 0 {
		limit = 16 << 20
	}
	fd, err := os.Open(path)
	if err != nil {
		return file{}, err
	}
	defer fd.Close()
	data, err := io.ReadAll(io.LimitReader(fd, limit+1))
	if err != nil {
		return file{}, fmt.Errorf("record: %w", err)
	}
	if int64(len(data)) > limit {
		return file{}, fmt.Errorf("record: %s is over %d bytes (Player.MaxBytes)", path, limit)
	}
	f, err := decode(data)
	if err != nil {
		return file{}, fmt.Errorf("record: %s: %w", path, err)
	}
	return f, nil
}

// Decode decodes a file of a recording, refusing what is not one: not
// JSON, a property it does not know, chunks that are not the response's
// text. The images of its request have their media type and no Data: a
// recording keeps a digest of their bytes, not the bytes.
func Decode(data []byte) (Call, error) {
	f, err := decode(data)
	if err != nil {
		return Call{}, err
	}
	return fromFile(f), nil
}

func decode(data []byte) (file, error) {
	var f file
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return file{}, fmt.Errorf("not a recorded call: %w", err)
	}
	if d.More() {
		return file{}, errors.New("not a recorded call: more after the call")
	}
	if strings.Join(f.Chunks, "") != f.Response.Text {
		return file{}, errors.New("not a recorded call: its chunks are not its response's text")
	}
	return f, nil
}

// differ says where two requests, as files hold them, differ, "" when
// they do not.
func differ(recorded, got fileRequest) string {
	a, _ := json.Marshal(recorded)
	b, _ := json.Marshal(got)
	if bytes.Equal(a, b) {
		return ""
	}
	switch {
	case recorded.System != got.System:
		return "its system prompt"
	case (recorded.ResponseFormat == nil) != (got.ResponseFormat == nil):
		return "its response format (Player.ResponseFormat should say what the recorded model said of it)"
	case len(recorded.Messages) != len(got.Messages):
		return fmt.Sprintf("%d messages, recorded %d", len(got.Messages), len(recorded.Messages))
	}
	for i := range got.Messages {
		x, _ := json.Marshal(recorded.Messages[i])
		y, _ := json.Marshal(got.Messages[i])
		if bytes.Equal(x, y) {
			continue
		}
		r, g := recorded.Messages[i], got.Messages[i]
		r.Images, g.Images = nil, nil
		x, _ = json.Marshal(r)
		y, _ = json.Marshal(g)
		if bytes.Equal(x, y) {
			return fmt.Sprintf("message %d's images", i)
		}
		return fmt.Sprintf("message %d", i)
	}
	return "its tools or options"
}
