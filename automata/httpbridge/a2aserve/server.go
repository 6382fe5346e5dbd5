package a2aserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/httpbridge"
)

// Front returns the front-end that serves an agent over A2A, for
// httpbridge.Config.Fronts at a path of its own ("/a2a"): its card at
// /a2a/.well-known/agent-card.json, JSON-RPC at /a2a. The agent is one
// task, its conversation, whose id is the agent's (under a Fleet, at
// /agents/{id}/a2a) or "self". One Front serves every agent of a Fleet
// whose FleetConfig.Bridge has it, with one bound on their streams
// (Config.MaxStreams). See the package documentation.
func Front[S, I, V any](cfg Config[I, V]) httpbridge.Front[S, I, V] {
	err := cfg.withDefaults()
	var docs []inputDoc
	if err == nil {
		docs, err = readSchema(cfg.Schema)
		if err != nil {
			err = fmt.Errorf("a2aserve: Config.Schema: %w", err)
		}
	}
	streams := make(chan struct{}, max(cfg.MaxStreams, 1))
	return func(b *httpbridge.Bridge[S, I, V]) (http.Handler, error) {
		if err != nil {
			return nil, err
		}
		c, err := newCore(&cfg, docs, b.ClientActors(), b.Decode, streams)
		if err != nil {
			return nil, err
		}
		return &handler[S, I, V]{core: c, tasks: agentTasks[S, I, V]{b}}, nil
	}
}

// core is what serves the protocol, whatever holds the agents.
type core[I, V any] struct {
	cfg     *Config[I, V]
	skills  []Skill
	input   func(Message) (I, error)
	streams chan struct{} // a slot per stream open
}

func newCore[I, V any](cfg *Config[I, V], docs []inputDoc, actors []string, decode func([]byte) (I, error), streams chan struct{}) (*core[I, V], error) {
	ins := clientInputs(docs, actors)
	if len(ins) == 0 {
		return nil, fmt.Errorf("a2aserve: no input of %s is in the schema (is Config.Schema decl.InputSchema()?)", strings.Join(actors, ", "))
	}
	c := &core[I, V]{cfg: cfg, input: cfg.Input, streams: streams}
	if c.input == nil {
		in, err := defaultInput(ins, decode)
		if err != nil {
			return nil, err
		}
		c.input = in
	}
	for _, in := range ins {
		desc := in.description
		if desc == "" {
			desc = "The input " + in.name + "."
		}
		s := Skill{ID: in.name, Name: in.name, Description: desc, InputModes: []string{"text/plain"}, OutputModes: []string{"text/plain"}}
		if in.actor != "" {
			s.Tags = []string{in.actor}
		} else {
			s.Tags = []string{"input"}
		}
		c.skills = append(c.skills, s)
	}
	return c, nil
}

// tasks finds the agent of a task for a request, under its owner rules.
type tasks[S, I, V any] interface {
	// with calls fn with the bridge of task taskID and its id; with
	// taskID "", a message's (create) finds or creates the task of
	// contextID ("": a new one), and any other request fails.
	with(r *http.Request, taskID, contextID string, create bool, fn func(b *httpbridge.Bridge[S, I, V], id string)) *rpcError
	// identify checks the caller before any request but the card's.
	identify(r *http.Request) *rpcError
}

// agentTasks is the one task of one agent.
type agentTasks[S, I, V any] struct{ b *httpbridge.Bridge[S, I, V] }

func (a agentTasks[S, I, V]) identify(*http.Request) *rpcError { return nil } // the bridge's front has

func (a agentTasks[S, I, V]) with(r *http.Request, taskID, contextID string, create bool, fn func(*httpbridge.Bridge[S, I, V], string)) *rpcError {
	id := a.b.AgentID()
	if id == "" {
		id = "self"
	}
	if (taskID != "" && taskID != id) || (contextID != "" && contextID != id) {
		return taskNotFound()
	}
	fn(a.b, id)
	return nil
}

func taskNotFound() *rpcError { return errorf(CodeTaskNotFound, "task not found") }

// handler serves the card and the JSON-RPC endpoint.
type handler[S, I, V any] struct {
	*core[I, V]
	tasks tasks[S, I, V]
}

func (h *handler[S, I, V]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, CardPath) {
		h.card(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, nil, &rpcError{Code: CodeInvalidRequest, Message: "invalid request: POST a JSON-RPC request (the agent card is at ." + CardPath + ")", status: http.StatusMethodNotAllowed})
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, nil, &rpcError{Code: CodeInvalidRequest, Message: "invalid request: the body must be application/json", status: http.StatusUnsupportedMediaType})
		return
	}
	if v := r.Header.Get("A2A-Version"); v != "" && v != ProtocolVersion && v != "1" {
		writeError(w, nil, errorf(CodeVersionNotSupported, "version not supported: A2A-Version %q; this agent speaks %s", clip(v, 32), ProtocolVersion))
		return
	}
	if e := h.tasks.identify(r); e != nil {
		writeError(w, nil, e)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLong *http.MaxBytesError
		if errors.As(err, &tooLong) {
			writeError(w, nil, &rpcError{Code: CodeInvalidRequest, Message: fmt.Sprintf("invalid request: the body is over %d bytes", tooLong.Limit), status: http.StatusRequestEntityTooLarge})
			return
		}
		writeError(w, nil, &rpcError{Code: CodeInvalidRequest, Message: "invalid request: reading the body: " + err.Error(), status: http.StatusBadRequest})
		return
	}
	req, e := parseRequest(body)
	if e != nil {
		writeError(w, req.ID, e)
		return
	}
	switch req.Method {
	case "SendMessage", "SendStreamingMessage":
		h.sendMessage(w, r, req, req.Method == "SendStreamingMessage")
	case "GetTask":
		h.getTask(w, r, req)
	case "SubscribeToTask":
		h.subscribe(w, r, req)
	case "CancelTask":
		h.cancelTask(w, r, req)
	case "ListTasks":
		writeError(w, req.ID, errorf(CodeUnsupported, "unsupported operation: ListTasks; a task is a conversation: GetTask names one"))
	case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig":
		writeError(w, req.ID, errorf(CodePushNotSupported, "push notifications are not supported: follow a task with SubscribeToTask"))
	case "GetExtendedAgentCard":
		writeError(w, req.ID, errorf(CodeExtendedCardMissing, "this agent has no extended card"))
	default:
		writeError(w, req.ID, errorf(CodeMethodNotFound, "method not found: %q", clip(req.Method, 64)))
	}
}

// card serves the agent card.
func (h *handler[S, I, V]) card(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "GET the agent card", http.StatusMethodNotAllowed)
		return
	}
	endpoint := h.cfg.URL
	if endpoint == "" {
		path := r.URL.Path
		if u, err := url.ParseRequestURI(r.RequestURI); err == nil && u.Path != "" {
			path = u.Path // before any StripPrefix
		}
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		endpoint = scheme + "://" + r.Host + strings.TrimSuffix(path, CardPath)
	}
	desc := h.cfg.Description
	if desc == "" {
		names := make([]string, len(h.skills))
		for i, s := range h.skills {
			names[i] = s.ID
		}
		desc = "An agent of moora-go; its skills: " + strings.Join(names, ", ") + "."
	}
	card := AgentCard{
		Name:                h.cfg.Name,
		Description:         desc,
		SupportedInterfaces: []AgentInterface{{URL: endpoint, ProtocolBinding: "JSONRPC", ProtocolVersion: ProtocolVersion}},
		Version:             h.cfg.Version,
		Capabilities:        Capabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain"},
		Skills:              h.skills,
	}
	data, _ := json.Marshal(card)
	w.Header().Set("Content-Type", "application/json")
	w.Write(data)
}

// sendParams are SendMessage's params.
type sendParams struct {
	Message       *Message `json:"message"`
	Configuration struct {
		HistoryLength     *int `json:"historyLength"`
		ReturnImmediately bool `json:"returnImmediately"`
	} `json:"configuration"`
}

// checkMessage checks a client's message against the limits.
func (h *handler[S, I, V]) checkMessage(m *Message) *rpcError {
	switch {
	case m == nil:
		return errorf(CodeInvalidParams, `invalid params: "message" is required`)
	case m.Role != RoleUser:
		return errorf(CodeInvalidParams, `invalid params: the message's role must be %q`, RoleUser)
	case len(m.Parts) == 0:
		return errorf(CodeInvalidParams, "invalid params: the message has no parts")
	case len(m.Parts) > h.cfg.MaxParts:
		return errorf(CodeInvalidParams, "invalid params: the message has %d parts, over %d", len(m.Parts), h.cfg.MaxParts)
	}
	for name, id := range map[string]string{"messageId": m.MessageID, "taskId": m.TaskID, "contextId": m.ContextID} {
		if e := h.checkID(name, id, name != "messageId"); e != nil {
			return e
		}
	}
	n := 0
	for i, p := range m.Parts {
		if p.Text == "" && p.Data == nil && p.URL == "" && p.Raw == nil {
			return errorf(CodeInvalidParams, "invalid params: part %d has no content (text, data, url or raw)", i)
		}
		if p.Text == "" {
			return errorf(CodeContentType, "content type not supported: part %d is not text; this agent reads text parts", i)
		}
		n += len(p.Text)
	}
	if n > h.cfg.MaxTextBytes {
		return errorf(CodeInvalidParams, "invalid params: the message's text is %d bytes, over %d", n, h.cfg.MaxTextBytes)
	}
	return nil
}

// checkID checks an id a client names: printable ASCII, at most
// MaxIDBytes; "" only where optional.
func (h *handler[S, I, V]) checkID(name, id string, optional bool) *rpcError {
	if id == "" {
		if optional {
			return nil
		}
		return errorf(CodeInvalidParams, "invalid params: %s is required", name)
	}
	if len(id) > h.cfg.MaxIDBytes {
		return errorf(CodeInvalidParams, "invalid params: %s is %d bytes, over %d", name, len(id), h.cfg.MaxIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return errorf(CodeInvalidParams, "invalid params: %s: byte %d is not printable ASCII", name, i)
		}
	}
	return nil
}

func decodeParams(raw json.RawMessage, v any) *rpcError {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

func (h *handler[S, I, V]) sendMessage(w http.ResponseWriter, r *http.Request, req request, stream bool) {
	var p sendParams
	if e := decodeParams(req.Params, &p); e != nil {
		writeError(w, req.ID, e)
		return
	}
	if e := h.checkMessage(p.Message); e != nil {
		writeError(w, req.ID, e)
		return
	}
	m := *p.Message
	in, err := h.input(m)
	if err != nil {
		writeError(w, req.ID, errorf(CodeInvalidParams, "invalid params: the message is not an input of this agent: %v", err))
		return
	}
	e := h.tasks.with(r, m.TaskID, m.ContextID, true, func(b *httpbridge.Bridge[S, I, V], id string) {
		_, v, _ := b.View()
		before := h.cfg.Task(v)
		if before.State.Terminal() {
			writeError(w, req.ID, errorf(CodeUnsupported, "unsupported operation: task %s is %s and takes no more messages", id, before.State))
			return
		}
		if stream {
			release, e := h.acquire()
			if e != nil {
				writeError(w, req.ID, e)
				return
			}
			defer release()
		}
		if _, err := b.Dispatch(r.Context(), in, m.MessageID); err != nil {
			writeError(w, req.ID, inputError(err))
			return
		}
		if stream {
			first := before
			first.State, first.Message = StateSubmitted, nil
			h.stream(w, r, req.ID, b, id, first)
			return
		}
		st, _ := h.wait(r.Context(), b, p.Configuration.ReturnImmediately)
		n := h.cfg.MaxHistory
		if hl := p.Configuration.HistoryLength; hl != nil && *hl >= 0 {
			n = min(n, *hl)
		}
		writeResult(w, req.ID, StreamResponse{Task: task(id, st, n)})
	})
	if e != nil {
		writeError(w, req.ID, e)
	}
}

// wait waits for the agent to stop working, at most MaxWait, and returns
// the task then.
func (h *handler[S, I, V]) wait(ctx context.Context, b *httpbridge.Bridge[S, I, V], now bool) (Status, uint64) {
	timer := time.NewTimer(h.cfg.MaxWait)
	defer timer.Stop()
	for {
		seq, v, changed := b.View()
		st := h.cfg.Task(v)
		if now || st.State.Terminal() || st.State.Interrupted() {
			return st, seq
		}
		select {
		case <-changed:
		case <-timer.C:
			return st, seq
		case <-ctx.Done():
			return st, seq
		case <-b.Done():
			return st, seq
		}
	}
}

// inputError is the answer to an input the bridge did not apply.
func inputError(err error) *rpcError {
	var ie *httpbridge.InputError
	if errors.As(err, &ie) {
		switch ie.Status {
		case http.StatusBadRequest, http.StatusForbidden, http.StatusUnprocessableEntity:
			return errorf(CodeInvalidParams, "invalid params: the agent refused the message (%d): %s", ie.Status, ie.Message)
		}
		e := errorf(CodeInternal, "the message was not applied (%d): %s", ie.Status, ie.Message)
		if ie.Retry {
			e.status, e.retry = http.StatusServiceUnavailable, true
			e.Message += " (send it again)"
		}
		return e
	}
	return errorf(CodeInternal, "the message was not applied: %v", err)
}

type idParams struct {
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength"`
}

func (h *handler[S, I, V]) getTask(w http.ResponseWriter, r *http.Request, req request) {
	var p idParams
	if e := decodeParams(req.Params, &p); e != nil {
		writeError(w, req.ID, e)
		return
	}
	if e := h.checkID("id", p.ID, false); e != nil {
		writeError(w, req.ID, e)
		return
	}
	n := h.cfg.MaxHistory
	if p.HistoryLength != nil && *p.HistoryLength >= 0 {
		n = min(n, *p.HistoryLength)
	}
	e := h.tasks.with(r, p.ID, "", false, func(b *httpbridge.Bridge[S, I, V], id string) {
		_, v, _ := b.View()
		writeResult(w, req.ID, task(id, h.cfg.Task(v), n))
	})
	if e != nil {
		writeError(w, req.ID, e)
	}
}

func (h *handler[S, I, V]) cancelTask(w http.ResponseWriter, r *http.Request, req request) {
	var p idParams
	if e := decodeParams(req.Params, &p); e != nil {
		writeError(w, req.ID, e)
		return
	}
	if e := h.checkID("id", p.ID, false); e != nil {
		writeError(w, req.ID, e)
		return
	}
	e := h.tasks.with(r, p.ID, "", false, func(*httpbridge.Bridge[S, I, V], string) {
		writeError(w, req.ID, errorf(CodeTaskNotCancelable, "task not cancelable: a task is a conversation of the agent, which its client ends by sending no more"))
	})
	if e != nil {
		writeError(w, req.ID, e)
	}
}

func (h *handler[S, I, V]) subscribe(w http.ResponseWriter, r *http.Request, req request) {
	var p idParams
	if e := decodeParams(req.Params, &p); e != nil {
		writeError(w, req.ID, e)
		return
	}
	if e := h.checkID("id", p.ID, false); e != nil {
		writeError(w, req.ID, e)
		return
	}
	e := h.tasks.with(r, p.ID, "", false, func(b *httpbridge.Bridge[S, I, V], id string) {
		_, v, _ := b.View()
		st := h.cfg.Task(v)
		if st.State.Terminal() {
			writeError(w, req.ID, errorf(CodeUnsupported, "unsupported operation: task %s is %s: there is nothing to follow", id, st.State))
			return
		}
		release, e := h.acquire()
		if e != nil {
			writeError(w, req.ID, e)
			return
		}
		defer release()
		h.stream(w, r, req.ID, b, id, st)
	})
	if e != nil {
		writeError(w, req.ID, e)
	}
}

// acquire takes a stream's slot.
func (h *handler[S, I, V]) acquire() (release func(), e *rpcError) {
	select {
	case h.streams <- struct{}{}:
		return func() { <-h.streams }, nil
	default:
		return nil, &rpcError{Code: CodeInternal, Message: fmt.Sprintf("too many streams: %d are open (a2aserve.Config.MaxStreams); try again later", h.cfg.MaxStreams), status: http.StatusServiceUnavailable, retry: true}
	}
}

// stream sends the task's events on an SSE stream: the task as first
// (its artifacts then), then each change of its status and artifacts as
// the agent's view changes, until the task waits for its client (an
// interrupted state) or ends, or the stream's time is up. Each event's
// id is the view's position (the journal's sequence number).
func (h *handler[S, I, V]) stream(w http.ResponseWriter, r *http.Request, reqID json.RawMessage, b *httpbridge.Bridge[S, I, V], id string, first Status) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	seq, _, _ := b.View()
	send := func(ev StreamResponse, seq uint64) bool {
		var buf bytes.Buffer
		buf.WriteString("id: ")
		buf.WriteString(strconv.FormatUint(seq, 10))
		buf.WriteString("\ndata: ")
		buf.Write(response(reqID, ev, nil))
		buf.WriteString("\n\n")
		if err := rc.SetWriteDeadline(time.Now().Add(h.cfg.WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	t := task(id, first, 0)
	if !send(StreamResponse{Task: t}, seq) {
		return
	}
	sent := map[string][]byte{}
	for _, a := range first.Artifacts {
		sent[a.ArtifactID], _ = json.Marshal(a)
	}
	last, _ := json.Marshal(t.Status)
	timer := time.NewTimer(h.cfg.MaxStreamTime)
	defer timer.Stop()
	for {
		seq, v, changed := b.View()
		st := h.cfg.Task(v)
		for _, a := range st.Artifacts {
			data, _ := json.Marshal(a)
			if bytes.Equal(sent[a.ArtifactID], data) {
				continue
			}
			sent[a.ArtifactID] = data
			if !send(StreamResponse{ArtifactUpdate: &ArtifactUpdate{TaskID: id, ContextID: id, Artifact: a, LastChunk: true}}, seq) {
				return
			}
		}
		status := task(id, st, 0).Status
		if data, _ := json.Marshal(status); !bytes.Equal(data, last) {
			last = data
			if !send(StreamResponse{StatusUpdate: &StatusUpdate{TaskID: id, ContextID: id, Status: status}}, seq) {
				return
			}
		}
		if st.State.Terminal() || st.State.Interrupted() {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			return
		case <-r.Context().Done():
			return
		case <-b.Done():
			return
		}
	}
}

// task is task id at st, with the newest n messages of its history.
func task(id string, st Status, n int) *Task {
	t := &Task{ID: id, ContextID: id, Status: TaskStatus{State: st.State}, Artifacts: st.Artifacts}
	if t.Status.State == "" {
		t.Status.State = StateWorking
	}
	if st.Message != nil {
		m := *st.Message
		m.TaskID, m.ContextID = id, id
		if m.Role == "" {
			m.Role = RoleAgent
		}
		t.Status.Message = &m
	}
	if n > 0 && len(st.History) > 0 {
		h := st.History[max(0, len(st.History)-n):]
		t.History = make([]Message, len(h))
		for i, m := range h {
			m.TaskID, m.ContextID = id, id
			t.History[i] = m
		}
	}
	return t
}

func writeResult(w http.ResponseWriter, id json.RawMessage, result any) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(response(id, result, nil))
}

func writeError(w http.ResponseWriter, id json.RawMessage, e *rpcError) {
	w.Header().Set("Content-Type", "application/json")
	if e.retry {
		w.Header().Set("Retry-After", "1")
	}
	if e.status != 0 {
		w.WriteHeader(e.status)
	}
	w.Write(response(id, nil, e))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
