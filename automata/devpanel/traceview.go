package devpanel

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/moora-go/moora/automata/internal/wire"
)

// The bounds of a trace view: a trace may go on for as long as an agent
// runs (a job whose input calls for the next job), and an attribute may
// hold a whole conversation.
const (
	maxViewSpans       = 1000 // spans of a trace
	maxViewAttrs       = 32   // attributes of a span, the first by key
	maxViewEvents      = 16   // events of a span, the first
	maxViewEventAttrs  = 8    // attributes of an event, the first by key
	maxViewValueLength = 512  // bytes of an attribute's value
)

// traceView is the answer of GET /trace: the spans of the trace of input
// Seq, in the order of a depth-first walk of their tree (children by start
// time), each with its depth. Start is when the first span of the trace
// started (Unix milliseconds); the spans' times are milliseconds since
// then. Omitted counts the spans of the trace left out beyond
// maxViewSpans.
type traceView struct {
	Seq     uint64     `json:"seq"`
	Agent   string     `json:"agent,omitempty"`
	TraceID string     `json:"traceId"`
	Start   int64      `json:"start"`
	Spans   []viewSpan `json:"spans"`
	Omitted int        `json:"omitted"`
}

// viewSpan is a span of a trace view. ParentID is its parent's id, when it
// has a parent in the trace, which may not be in the view (another
// process's span, or one forgotten or left out): the view's order and
// Depth make the tree. End is null while the span runs. Category says what the span
// is: "input" (an input applied, with its journal entry in Input), "job",
// "model" (a model call, by the GenAI conventions), "tool" (a tool call)
// or "other". Chosen marks the span of the input asked for.
// DroppedAttributes counts the attributes left out, here or by the
// TracerProvider's limits.
type viewSpan struct {
	SpanID            string         `json:"spanId"`
	ParentID          string         `json:"parentId,omitempty"`
	Depth             int            `json:"depth"`
	Name              string         `json:"name"`
	Kind              string         `json:"kind"`
	Category          string         `json:"category"`
	Start             float64        `json:"start"`
	End               *float64       `json:"end"`
	Status            string         `json:"status"`
	StatusMessage     string         `json:"statusMessage,omitempty"`
	Attributes        map[string]any `json:"attributes"`
	DroppedAttributes int            `json:"droppedAttributes,omitempty"`
	Events            []viewEvent    `json:"events"`
	DroppedEvents     int            `json:"droppedEvents,omitempty"`
	Input             *viewInput     `json:"input,omitempty"`
	Chosen            bool           `json:"chosen,omitempty"`
}

// viewEvent is an event of a span, At milliseconds since the trace's start.
type viewEvent struct {
	Name       string         `json:"name"`
	At         float64        `json:"at"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// viewInput is the journal's entry of an input span's input.
type viewInput struct {
	Seq     uint64 `json:"seq"`
	Time    int64  `json:"time"`
	Type    string `json:"type"`
	Actor   string `json:"actor,omitempty"`
	Dropped string `json:"dropped,omitempty"`
}

// traceFor answers GET /trace?seq=N: the trace of input N, from the spans
// Config.Traces recorded and the journal.
func (p *Panel[S, I]) traceFor(w http.ResponseWriter, r *http.Request) {
	if p.cfg.Traces == nil {
		wire.WriteError(w, http.StatusNotFound, "the panel records no traces: its Config.Traces is nil")
		return
	}
	if p.traceRefusal != "" {
		wire.WriteError(w, http.StatusNotFound, "%s", p.traceRefusal)
		return
	}
	q := r.URL.Query().Get("seq")
	seq, err := strconv.ParseUint(q, 10, 64)
	if err != nil || seq == 0 {
		wire.WriteError(w, http.StatusBadRequest, "seq %q is not the sequence number of an input", q)
		return
	}
	if last := p.agent.Seq(); seq > last {
		wire.WriteError(w, http.StatusNotFound, "no input %d yet: the journal ends at %d", seq, last)
		return
	}
	spans, id, ok := p.cfg.Traces.input(p.cfg.AgentID, seq)
	if !ok {
		wire.WriteError(w, http.StatusNotFound, "no span is recorded for input %d: either the agent is not traced "+
			"(open it with automata.WithTelemetry and a TracerProvider that has Config.Traces as a span processor), "+
			"or the span was forgotten (Traces keeps the latest %d spans)", seq, len(p.cfg.Traces.ring))
		return
	}
	wire.WriteJSON(w, http.StatusOK, p.view(seq, spans, id))
}

// spanInfo is what the view reads of a span, read once.
type spanInfo struct {
	span     sdktrace.ReadOnlySpan
	id       trace.SpanID
	parent   trace.SpanID // invalid for a root
	start    time.Time
	attrs    []attribute.KeyValue
	agent    string // moora.agent.id
	foreign  bool   // another agent's
	children []int
	depth    int
}

// view builds the view of the trace of input seq, whose span is chosen,
// from the trace's spans (oldest first). The spans of another agent than
// the panel's (when it has an id), and the spans under them, are left out.
func (p *Panel[S, I]) view(seq uint64, spans []sdktrace.ReadOnlySpan, chosen trace.SpanID) traceView {
	infos := make([]spanInfo, len(spans))
	index := make(map[trace.SpanID]int, len(spans))
	for i, s := range spans {
		attrs := s.Attributes()
		in := spanInfo{span: s, id: s.SpanContext().SpanID(), start: s.StartTime(), attrs: attrs}
		if pc := s.Parent(); pc.IsValid() && pc.TraceID() == s.SpanContext().TraceID() {
			in.parent = pc.SpanID()
		}
		for _, a := range attrs {
			if a.Key == keyAgentID {
				in.agent = a.Value.Emit()
			}
		}
		in.foreign = p.cfg.AgentID != "" && in.agent != "" && in.agent != p.cfg.AgentID
		infos[i] = in
		index[in.id] = i
	}
	var roots []int
	for i := range infos {
		if pi, ok := index[infos[i].parent]; ok && infos[i].parent.IsValid() && pi != i {
			infos[pi].children = append(infos[pi].children, i)
		} else {
			roots = append(roots, i)
		}
	}
	byStart := func(a, b int) int { return infos[a].start.Compare(infos[b].start) }
	slices.SortStableFunc(roots, byStart)
	for i := range infos {
		slices.SortStableFunc(infos[i].children, byStart)
	}

	// The visible spans, depth first. Another agent's span is left out,
	// and so are the spans under it that are not the panel's agent's (its
	// model calls, say); a span of the panel's agent under it is shown, one
	// level below the nearest span shown above it.
	var order []int
	seen := make([]bool, len(infos))
	var walk func(i, depth int, hidden bool)
	walk = func(i, depth int, hidden bool) {
		if seen[i] {
			return
		}
		seen[i] = true
		in := &infos[i]
		hidden = in.foreign || hidden && in.agent != p.cfg.AgentID
		if !hidden {
			in.depth = depth
			order = append(order, i)
			depth++
		}
		for _, c := range in.children {
			walk(c, depth, hidden)
		}
	}
	for _, r := range roots {
		walk(r, 0, false)
	}
	keep := keepForView(infos, index, order, index[chosen])
	chosenAgent := infos[index[chosen]].agent

	v := traceView{Seq: seq, Agent: p.cfg.AgentID, TraceID: spans[0].SpanContext().TraceID().String(), Spans: []viewSpan{}}
	var t0 time.Time
	for _, i := range order {
		if keep[i] && (t0.IsZero() || infos[i].start.Before(t0)) {
			t0 = infos[i].start
		}
	}
	v.Start = t0.UnixMilli()
	inputs := map[uint64]*viewInput{}
	for _, i := range order {
		if !keep[i] {
			v.Omitted++
			continue
		}
		in := &infos[i]
		vs := viewSpanOf(in, t0)
		vs.Chosen = in.id == chosen
		if vs.Category == "input" && in.agent == chosenAgent {
			if k := inputOf(in.attrs); k != nil {
				inputs[k.seq] = nil
			}
		}
		v.Spans = append(v.Spans, vs)
	}
	p.journalEntries(inputs)
	for i := range v.Spans {
		vs := &v.Spans[i]
		if vs.Category != "input" {
			continue
		}
		s, _ := vs.Attributes[keyInputSeq].(int64)
		if e := inputs[uint64(s)]; e != nil && s > 0 && e.Type == vs.Attributes[keyInputType] {
			vs.Input = e
		}
	}
	return v
}

// keepForView chooses the spans of a view, at most maxViewSpans of the
// visible ones (order): the chosen input's, its nearest ancestors (a
// quarter of the bound at most), then its descendants nearest first, then
// the others in order.
func keepForView(infos []spanInfo, index map[trace.SpanID]int, order []int, chosen int) []bool {
	keep := make([]bool, len(infos))
	if len(order) <= maxViewSpans {
		for _, i := range order {
			keep[i] = true
		}
		return keep
	}
	visible := make([]bool, len(infos))
	for _, i := range order {
		visible[i] = true
	}
	n := 0
	add := func(i int) {
		if visible[i] && !keep[i] && n < maxViewSpans {
			keep[i] = true
			n++
		}
	}
	// The nearest ancestors: a trace may be a long chain (a job whose
	// input calls for the next job), its first spans far from the input.
	for i, ok, steps := chosen, true, 0; ok && steps < maxViewSpans/4; i, ok = index[infos[i].parent] {
		add(i)
		steps++
	}
	queued := make([]bool, len(infos))
	for queue := []int{chosen}; len(queue) > 0 && n < maxViewSpans; queue = queue[1:] {
		for _, c := range infos[queue[0]].children {
			if !queued[c] {
				queued[c] = true
				add(c)
				queue = append(queue, c)
			}
		}
	}
	for _, i := range order {
		add(i)
	}
	return keep
}

// journalEntries fills inputs (by seq) with their journal entries, reading
// each run of consecutive seqs at once. An input the journal no longer has
// (compacted) stays nil.
func (p *Panel[S, I]) journalEntries(inputs map[uint64]*viewInput) {
	seqs := make([]uint64, 0, len(inputs))
	for s := range inputs {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	for len(seqs) > 0 {
		run := 1
		for run < len(seqs) && seqs[run] == seqs[run-1]+1 {
			run++
		}
		entries, err := p.agent.Inputs(seqs[0], seqs[run-1])
		if err != nil {
			p.cfg.Logger.Warn("devpanel: reading the journal for a trace", "from", seqs[0], "to", seqs[run-1], "err", err)
		}
		for _, e := range entries {
			if _, ok := inputs[e.Seq]; !ok {
				continue
			}
			vi := &viewInput{Seq: e.Seq, Time: e.Time.UnixMilli()}
			if e.Dropped != nil {
				vi.Type, vi.Dropped = e.Dropped.Type, e.Dropped.Error()
			} else {
				vi.Type = inputType(e.Input)
				if p.cfg.Actor != nil {
					vi.Actor = p.cfg.Actor(e.Input)
				}
			}
			inputs[e.Seq] = vi
		}
		seqs = seqs[run:]
	}
}

// viewSpanOf is the view of a span, its times in milliseconds since t0.
func viewSpanOf(in *spanInfo, t0 time.Time) viewSpan {
	s := in.span
	vs := viewSpan{
		SpanID:   in.id.String(),
		Depth:    in.depth,
		Name:     s.Name(),
		Kind:     s.SpanKind().String(),
		Category: category(s.Name(), in.attrs),
		Start:    millis(in.start.Sub(t0)),
		Status:   strings.ToLower(s.Status().Code.String()),
		Events:   []viewEvent{},
	}
	if in.parent.IsValid() {
		vs.ParentID = in.parent.String()
	}
	if end := s.EndTime(); !end.IsZero() {
		e := millis(end.Sub(t0))
		vs.End = &e
	}
	if vs.Status == "error" {
		vs.StatusMessage = clipValue(s.Status().Description)
	}
	var dropped int
	vs.Attributes, dropped = viewAttrs(in.attrs, maxViewAttrs)
	vs.DroppedAttributes = dropped + s.DroppedAttributes()
	events := s.Events()
	vs.DroppedEvents = s.DroppedEvents()
	if len(events) > maxViewEvents {
		vs.DroppedEvents += len(events) - maxViewEvents
		events = events[:maxViewEvents]
	}
	for _, e := range events {
		attrs, _ := viewAttrs(e.Attributes, maxViewEventAttrs)
		vs.Events = append(vs.Events, viewEvent{Name: e.Name, At: millis(e.Time.Sub(t0)), Attributes: attrs})
	}
	return vs
}

// category says what a span is, for the page to draw: by package automata's
// span names, and the operation the GenAI conventions name
// (gen_ai.operation.name, else the first word of the span's name).
func category(name string, attrs []attribute.KeyValue) string {
	if strings.HasPrefix(name, "moora.input ") {
		return "input"
	}
	if name == "moora.job" {
		return "job"
	}
	op, _, _ := strings.Cut(name, " ")
	for _, a := range attrs {
		if a.Key == "gen_ai.operation.name" {
			op = a.Value.Emit()
		}
	}
	switch op {
	case "execute_tool":
		return "tool"
	case "chat", "text_completion", "generate_content", "embeddings", "invoke_agent", "create_agent":
		return "model"
	}
	return "other"
}

// viewAttrs returns the first max attributes by key, their values bounded,
// and how many it left out.
func viewAttrs(attrs []attribute.KeyValue, max int) (map[string]any, int) {
	if len(attrs) == 0 {
		return nil, 0
	}
	sorted := slices.SortedFunc(slices.Values(attrs), func(a, b attribute.KeyValue) int { return cmp.Compare(a.Key, b.Key) })
	dropped := 0
	if len(sorted) > max {
		dropped = len(sorted) - max
		sorted = sorted[:max]
	}
	m := make(map[string]any, len(sorted))
	for _, a := range sorted {
		m[string(a.Key)] = viewValue(a.Value)
	}
	return m, dropped
}

// viewValue is an attribute's value as JSON: a scalar as it is (a float
// that JSON cannot hold as text), a text cut at maxViewValueLength, a list
// or a map as its text, cut likewise.
func viewValue(v attribute.Value) any {
	switch v.Type() {
	case attribute.BOOL:
		return v.AsBool()
	case attribute.INT64:
		return v.AsInt64()
	case attribute.FLOAT64:
		if f := v.AsFloat64(); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
		return v.Emit()
	case attribute.STRING:
		return clipValue(v.AsString())
	}
	return clipValue(v.Emit())
}

// clipValue cuts s to maxViewValueLength bytes, at a character boundary,
// and says so.
func clipValue(s string) string {
	if len(s) <= maxViewValueLength {
		return s
	}
	n := maxViewValueLength
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("…[truncated: %d bytes]", len(s))
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 {
	return math.Round(float64(d)/1e3) / 1e3
}
