package record_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/record"
)

var weather = llm.Tool{Name: "weather", Description: "Tells the weather.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}

func conversation(key string) llm.Request {
	return llm.Request{
		System:         "Be brief.",
		Messages:       []llm.Message{{Role: llm.RoleUser, Content: "Is it raining in Paris?"}},
		Tools:          []llm.Tool{weather},
		IdempotencyKey: key,
	}
}

// model answers with a text in three chunks and a tool call, and counts
// its calls.
type model struct{ calls int }

func (m *model) Complete(ctx context.Context, req llm.Request, onChunk func(string)) (llm.Response, error) {
	m.calls++
	return llm.Scripted{Reply: func(llm.Request) (llm.Response, error) {
		return llm.Response{Text: "Let me look it up.", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: json.RawMessage(`{ "city": "Paris" }`)}},
			Usage: llm.Usage{InputTokens: 30, OutputTokens: 9, CacheReadInputTokens: 20}}, nil
	}}.Complete(ctx, req, onChunk)
}

// TestPlayedAsRecorded: what a Player streams and answers is what the model
// streamed and answered when it was recorded, chunk for chunk, and the
// model is not called again.
func TestPlayedAsRecorded(t *testing.T) {
	dir := t.TempDir()
	m := &model{}
	var live []string
	want, err := record.New(m, dir).Complete(context.Background(), conversation("brain/ask-brain-17"), func(s string) { live = append(live, s) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "brain%2Fask-brain-17.json")); err != nil {
		t.Fatalf("the call's file: %v", err)
	}
	var played []string
	got, err := record.Player{Dir: dir}.Complete(context.Background(), conversation("brain/ask-brain-17"), func(s string) { played = append(played, s) })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(played, live) || len(live) < 2 {
		t.Fatalf("played %q %+v, recorded %q %+v", played, got, live, want)
	}
	if m.calls != 1 {
		t.Errorf("the model was called %d times", m.calls)
	}
}

// TestPlayerRefusesWhatWasNotRecorded: a key with no file, a request that
// changed (unless AnyRequest), a call without a key, a file over MaxBytes.
func TestPlayerRefusesWhatWasNotRecorded(t *testing.T) {
	dir := t.TempDir()
	if _, err := record.New(&model{}, dir).Complete(context.Background(), conversation("k1"), nil); err != nil {
		t.Fatal(err)
	}
	p := record.Player{Dir: dir}
	if _, err := p.Complete(context.Background(), conversation("k2"), nil); !errors.Is(err, record.ErrNotRecorded) || !strings.Contains(err.Error(), `"k2"`) {
		t.Errorf("an unknown key: %v", err)
	}
	changed := conversation("k1")
	changed.Messages[0].Content = "Is it sunny in Paris?"
	if _, err := p.Complete(context.Background(), changed, nil); err == nil || !strings.Contains(err.Error(), "message 0") {
		t.Errorf("a changed request: %v", err)
	}
	if _, err := (record.Player{Dir: dir, AnyRequest: true}).Complete(context.Background(), changed, nil); err != nil {
		t.Errorf("a changed request with AnyRequest: %v", err)
	}
	if _, err := p.Complete(context.Background(), conversation(""), nil); err == nil || !strings.Contains(err.Error(), "without an idempotency key") {
		t.Errorf("no key: %v", err)
	}
	if _, err := record.New(&model{}, dir).Complete(context.Background(), conversation(""), nil); err == nil {
		t.Error("recording a call without a key: no error")
	}
	if _, err := (record.Player{Dir: dir, MaxBytes: 10}).Complete(context.Background(), conversation("k1"), nil); err == nil || !strings.Contains(err.Error(), "over 10 bytes") {
		t.Errorf("a file over MaxBytes: %v", err)
	}
}

// TestARecorderPassesAFailure: a failed call is the model's error, and no
// file is written.
func TestARecorderPassesAFailure(t *testing.T) {
	dir := t.TempDir()
	failing := llm.Scripted{Reply: func(llm.Request) (llm.Response, error) { return llm.Response{}, llm.ErrRateLimited }}
	if _, err := record.New(failing, dir).Complete(context.Background(), conversation("k1"), nil); !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written: %v", entries)
	}
}

// FuzzDecode: any bytes decode as a recorded call or are refused with an
// error, never a panic; a call decoded has chunks that are its text.
func FuzzDecode(f *testing.F) {
	good := `{"request":{"messages":[{"role":"user","content":"hi"}],"idempotencyKey":"k"},"chunks":["a","b"],"response":{"text":"ab","toolCalls":[{"id":"c","name":"t","arguments":"{ }"}],"usage":{"InputTokens":1}}}`
	withImage := `{"request":{"messages":[{"role":"user","images":[{"mediaType":"image/png","bytes":3,"sha256":"ab"}]}],"idempotencyKey":"k"},"chunks":[],"response":{"text":""}}`
	for _, s := range []string{good, withImage, `{}`, `{"chunks":["x"]}`, `{"bogus":1}`, `{} {}`, `[`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		call, err := record.Decode(data)
		if err != nil {
			return
		}
		if strings.Join(call.Chunks, "") != call.Response.Text {
			t.Fatalf("decoded chunks %q, text %q", call.Chunks, call.Response.Text)
		}
	})
}

// TestAResponseFormatIsRecorded: a request's response format is recorded
// byte for byte and played back; a request that lacks it is not the one
// recorded; the Recorder says what its model says of its native mode, and a
// Player what it is told.
func TestAResponseFormatIsRecorded(t *testing.T) {
	dir := t.TempDir()
	req := llm.Request{System: "Triage.", Messages: []llm.Message{{Role: llm.RoleUser, Content: "down"}}, IdempotencyKey: "triage",
		ResponseFormat: &llm.JSONSchema{Name: "answer", Description: "The triage.", Schema: json.RawMessage(`{"type": "object"}`), Strict: true}}
	native := llm.Scripted{ResponseFormat: true, Reply: func(llm.Request) (llm.Response, error) { return llm.Response{Text: `{"severity":"high"}`}, nil }}
	rec := record.New(native, dir)
	if !llm.SupportsResponseFormat(rec) || llm.SupportsResponseFormat(record.New(&model{}, dir)) {
		t.Error("a Recorder does not say what its model says")
	}
	want, err := rec.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "triage.json"))
	if err != nil || !strings.Contains(string(data), `"schema": "{\"type\": \"object\"}"`) || !strings.Contains(string(data), `"strict": true`) {
		t.Fatalf("the file: %s (%v)", data, err)
	}
	p := record.Player{Dir: dir, ResponseFormat: true}
	if !llm.SupportsResponseFormat(p) || llm.SupportsResponseFormat(record.Player{Dir: dir}) {
		t.Error("a Player does not say what it is told")
	}
	got, err := p.Complete(context.Background(), req, nil)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("played %+v (%v), recorded %+v", got, err, want)
	}
	without := req
	without.ResponseFormat = nil
	if _, err := p.Complete(context.Background(), without, nil); err == nil || !strings.Contains(err.Error(), "its response format") {
		t.Errorf("a request without the recorded format: %v", err)
	}
}
