package a2a

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/moora-go/moora/automata/toolkit"
)

// Config says which remote agent to mount, and how. URL is required; a
// zero limit is its default.
type Config struct {
	// URL is the agent's base URL: its card is at URL's
	// .well-known/agent-card.json, resolved as the JavaScript SDK does (a
	// URL that ends in "/" keeps its path).
	URL string
	// Header is sent with every request (Authorization, say).
	Header http.Header
	// Name is the tool's name. Default: the card's name, each character a
	// chat API refuses made '_'.
	Name string
	// Prefix is what the tool's name is given when another tool of the
	// kit has it (toolkit.Mount).
	Prefix string
	// Policy guards the tool's calls as any toolkit tool's: Timeout (each
	// try, the whole SendMessage), Retries, MaxConcurrent, MaxResultBytes,
	// the breaker.
	Policy toolkit.Policy
	// HTTPClient sends the requests (default: a client of its own). Its
	// redirects are not followed.
	HTTPClient *http.Client
	// ConnectTimeout bounds each fetch of the card (default 30 s);
	// MinBackoff and MaxBackoff the waits between fetches that failed
	// (default 200 ms, doubled to 30 s).
	ConnectTimeout, MinBackoff, MaxBackoff time.Duration
	// MaxCardBytes bounds the card read (default 1 MiB), and
	// MaxResponseBytes an answer to a call (default 4 MiB): a longer one
	// is a failure.
	MaxCardBytes, MaxResponseBytes int64
	// Logger receives what goes wrong. Default slog.Default().
	Logger *slog.Logger
}

// The defaults of Config.
const (
	DefaultConnectTimeout   = 30 * time.Second
	DefaultMinBackoff       = 200 * time.Millisecond
	DefaultMaxBackoff       = 30 * time.Second
	DefaultMaxCardBytes     = 1 << 20
	DefaultMaxResponseBytes = 4 << 20
)

// CardPath is where an agent card is, relative to the agent's URL.
const CardPath = ".well-known/agent-card.json"

func (c Config) withDefaults() (Config, error) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("a2a: Config.URL %q is not an http or https URL", c.URL)
	}
	if c.ConnectTimeout < 0 || c.MinBackoff < 0 || c.MaxBackoff < 0 || c.MaxCardBytes < 0 || c.MaxResponseBytes < 0 {
		return c, errors.New("a2a: a limit of Config is negative")
	}
	c.ConnectTimeout = or(c.ConnectTimeout, DefaultConnectTimeout)
	c.MinBackoff = or(c.MinBackoff, DefaultMinBackoff)
	c.MaxBackoff = or(c.MaxBackoff, DefaultMaxBackoff)
	c.MaxCardBytes = or(c.MaxCardBytes, DefaultMaxCardBytes)
	c.MaxResponseBytes = or(c.MaxResponseBytes, DefaultMaxResponseBytes)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	client := http.Client{}
	if c.HTTPClient != nil {
		client = *c.HTTPClient
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.HTTPClient = &client
	return c, nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Card is what this package reads of an agent card.
type Card struct {
	Name                string `json:"name"`
	Description         string `json:"description"`
	SupportedInterfaces []struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"supportedInterfaces"`
	Skills []struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"skills"`
	endpoint string // the JSON-RPC interface's URL
}

// Agent is a remote A2A agent mounted in a kit as one tool.
type Agent struct {
	cfg   Config
	mount *toolkit.Mount
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu    sync.Mutex
	card  *Card
	why   error // why the card is not fetched
	ready chan struct{}
}

// Mount mounts the agent at cfg.URL in kit: it returns at once, fetches the
// card in the background (again, after a backoff, until it has it), and
// adds the agent's tool then. Close removes it.
func Mount(kit *toolkit.Kit, cfg Config) (*Agent, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, mount: kit.Mount(cfg.Prefix), stop: make(chan struct{}), done: make(chan struct{}), ready: make(chan struct{}), why: errors.New("its card is not fetched yet")}
	go a.run()
	return a, nil
}

// Ready waits until the agent's tool is in the kit, or ctx ends.
func (a *Agent) Ready(ctx context.Context) error {
	select {
	case <-a.ready:
		return nil
	case <-ctx.Done():
		a.mu.Lock()
		defer a.mu.Unlock()
		return fmt.Errorf("a2a: agent %s: %w (%v)", a.cfg.URL, ctx.Err(), a.why)
	}
}

// Card returns the agent's card, once fetched.
func (a *Agent) Card() (Card, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.card == nil {
		return Card{}, false
	}
	return *a.card, true
}

// Close removes the agent's tool from the kit and stops fetching its card.
func (a *Agent) Close() error {
	a.once.Do(func() { close(a.stop) })
	<-a.done
	a.mount.Close()
	return nil
}

// run fetches the card until it has it, and sets the tool.
func (a *Agent) run() {
	defer close(a.done)
	wait := a.cfg.MinBackoff
	for {
		card, err := a.fetchCard()
		if err == nil {
			err = a.mount.Set(a.tool(card))
			if err == nil {
				a.mu.Lock()
				a.card, a.why = card, nil
				a.mu.Unlock()
				close(a.ready)
				return
			}
		}
		a.mu.Lock()
		a.why = err
		a.mu.Unlock()
		a.cfg.Logger.Warn("a2a: fetching the agent's card", "url", a.cfg.URL, "err", err, "retry", wait)
		select {
		case <-a.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, a.cfg.MaxBackoff)
	}
}

// fetchCard fetches and checks the card.
func (a *Agent) fetchCard() (*Card, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ConnectTimeout)
	defer cancel()
	go func() {
		select {
		case <-a.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	base, _ := url.Parse(a.cfg.URL)
	cardURL := base.ResolveReference(&url.URL{Path: CardPath})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cardURL.String(), nil)
	a.headers(req)
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching its card: %w", withoutURL(err))
	}
	defer resp.Body.Close()
	body, err := readAtMost(resp.Body, a.cfg.MaxCardBytes)
	if err != nil {
		return nil, fmt.Errorf("reading its card: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching its card: %s: %s", resp.Status, quote(body))
	}
	var card Card
	if err := json.Unmarshal(body, &card); err != nil {
		return nil, fmt.Errorf("its card is not JSON: %v", err)
	}
	for _, in := range card.SupportedInterfaces {
		if !strings.EqualFold(in.ProtocolBinding, "JSONRPC") || (in.ProtocolVersion != "" && in.ProtocolVersion != "1.0") {
			continue
		}
		u, err := url.Parse(in.URL)
		if err != nil || u.Scheme != cardURL.Scheme || u.Host != cardURL.Host {
			// A card names where to send calls, with the Header: only
			// where the card itself came from.
			return nil, fmt.Errorf("its card's JSON-RPC interface %q is not at its card's origin %s://%s", clip(in.URL, 200), cardURL.Scheme, cardURL.Host)
		}
		card.endpoint = u.String()
		break
	}
	if card.endpoint == "" {
		return nil, errors.New("its card names no JSON-RPC interface of A2A 1.0")
	}
	return &card, nil
}

func (a *Agent) headers(r *http.Request) {
	for k, vs := range a.cfg.Header {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	r.Header.Set("A2A-Version", "1.0")
}

// args are the tool's arguments.
type args struct {
	Message string `json:"message"`
	TaskID  string `json:"taskId,omitempty"`
}

const parameters = `{"type":"object","properties":{` +
	`"message":{"type":"string","minLength":1,"description":"What to tell the agent, in words."},` +
	`"taskId":{"type":"string","minLength":1,"maxLength":256,"description":"To answer the agent's question (its task waits for input): the task's id, as its answer gave it. Left out, a new task."}},` +
	`"required":["message"],"additionalProperties":false}`

// tool is the agent's tool.
func (a *Agent) tool(card *Card) toolkit.Tool {
	name := a.cfg.Name
	if name == "" {
		name = toolName(card.Name)
	}
	var desc strings.Builder
	desc.WriteString(strings.TrimSpace(card.Description))
	if desc.Len() == 0 {
		desc.WriteString("A remote agent (A2A).")
	}
	for i, s := range card.Skills {
		if i == 0 {
			desc.WriteString(" Its skills:")
		}
		fmt.Fprintf(&desc, " %s: %s;", or(s.Name, s.ID), strings.TrimSuffix(s.Description, "."))
	}
	text := strings.TrimSuffix(desc.String(), ";")
	if len(text) > 4096 {
		text = text[:4096]
	}
	text += " (A remote agent: send it a message; when it asks a question, answer with its taskId.)"
	endpoint := card.endpoint
	return toolkit.Remote(name, text, json.RawMessage(parameters), func(ctx context.Context, raw json.RawMessage) (string, error) {
		var in args
		if err := json.Unmarshal(raw, &in); err != nil {
			return "", fmt.Errorf("%w: %v", toolkit.ErrInvalid, err)
		}
		return a.send(ctx, endpoint, name, in)
	}).With(a.cfg.Policy)
}

// messageID is the messageId of a call of key: the key, when it is short
// printable ASCII (as servers take ids), else its SHA-256 (the same on
// every try); without a key, a random one.
func messageID(key string) string {
	if key == "" {
		var b [12]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}
	ok := len(key) <= 64
	for i := 0; ok && i < len(key); i++ {
		ok = key[i] > 0x20 && key[i] < 0x7f
	}
	if ok {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "k-" + hex.EncodeToString(sum[:16])
}

// toolName makes a card's name a tool's name.
func toolName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "agent"
	}
	return b.String()
}

// The A2A shapes a call reads.
type part struct {
	Text string          `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	URL  string          `json:"url,omitempty"`
}

type message struct {
	MessageID string `json:"messageId"`
	TaskID    string `json:"taskId,omitempty"`
	Role      string `json:"role"`
	Parts     []part `json:"parts"`
}

type task struct {
	ID     string `json:"id"`
	Status struct {
		State   string   `json:"state"`
		Message *message `json:"message"`
	} `json:"status"`
	Artifacts []struct {
		Name  string `json:"name"`
		Parts []part `json:"parts"`
	} `json:"artifacts"`
}

// send sends the message of a call and says what the agent answered.
func (a *Agent) send(ctx context.Context, endpoint, name string, in args) (string, error) {
	id := messageID(toolkit.Key(ctx))
	params := map[string]any{
		"message":       message{MessageID: id, TaskID: in.TaskID, Role: "ROLE_USER", Parts: []part{{Text: in.Message}}},
		"configuration": map[string]any{"returnImmediately": false},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	a.headers(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("agent %s: %w", name, withoutURL(err))
	}
	defer resp.Body.Close()
	data, err := readAtMost(resp.Body, a.cfg.MaxResponseBytes)
	if err != nil {
		return "", fmt.Errorf("agent %s: reading its answer: %w", name, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", fmt.Errorf("%w: agent %s answered %s", toolkit.ErrPermission, name, resp.Status)
	case resp.StatusCode >= 300 && !json.Valid(data):
		return "", fmt.Errorf("agent %s answered %s: %s", name, resp.Status, quote(data))
	}
	var out struct {
		JSONRPC string `json:"jsonrpc"`
		Result  *struct {
			Task    *task    `json:"task"`
			Message *message `json:"message"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.JSONRPC != "2.0" || (out.Result == nil && out.Error == nil) {
		return "", fmt.Errorf("agent %s: its answer is not a JSON-RPC response: %s", name, quote(data))
	}
	if e := out.Error; e != nil {
		msg := fmt.Sprintf("agent %s answered with an error (%d): %s", name, e.Code, clip(e.Message, 1000))
		switch e.Code {
		case -32602, -32001, -32005: // invalid params, task not found, content type
			return "", fmt.Errorf("%w: %s", toolkit.ErrInvalid, msg)
		}
		return "", errors.New(msg)
	}
	if m := out.Result.Message; m != nil {
		return texts(m.Parts), nil
	}
	t := out.Result.Task
	if t == nil {
		return "", fmt.Errorf("agent %s: its answer has neither a task nor a message", name)
	}
	said := ""
	if t.Status.Message != nil {
		said = texts(t.Status.Message.Parts)
	}
	var arts []string
	for _, art := range t.Artifacts {
		if s := texts(art.Parts); s != "" {
			arts = append(arts, s)
		}
	}
	switch state := strings.TrimPrefix(t.Status.State, "TASK_STATE_"); state {
	case "COMPLETED":
		if len(arts) > 0 {
			return strings.Join(arts, "\n"), nil
		}
		return said, nil
	case "INPUT_REQUIRED", "AUTH_REQUIRED":
		return fmt.Sprintf("The agent asks (answer it with taskId %q): %s", t.ID, or(said, "(it says nothing more)")), nil
	case "FAILED", "REJECTED", "CANCELED":
		return "", fmt.Errorf("agent %s: its task %s is %s: %s", name, t.ID, strings.ToLower(state), or(said, "(it says nothing more)"))
	default:
		return fmt.Sprintf("The agent's task %s is %s (not done yet)%s", t.ID, strings.ToLower(state), prefixed(": ", strings.Join(append(arts, said), "\n"))), nil
	}
}

func prefixed(p, s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return p + s
}

// texts is the text of parts, a part a line; data parts as their JSON.
func texts(ps []part) string {
	var lines []string
	for _, p := range ps {
		switch {
		case p.Text != "":
			lines = append(lines, p.Text)
		case len(p.Data) > 0:
			lines = append(lines, string(p.Data))
		case p.URL != "":
			lines = append(lines, "[file: "+p.URL+"]")
		}
	}
	return strings.Join(lines, "\n")
}

// readAtMost reads r, failing if it holds more than n bytes.
func readAtMost(r io.Reader, n int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, n+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > n {
		return nil, fmt.Errorf("over %d bytes (a2a.Config's limit)", n)
	}
	return data, nil
}

// withoutURL drops the URL of a transport error, whose query may hold a
// secret.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

func quote(b []byte) string { return fmt.Sprintf("%q", clip(string(b), 200)) }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
