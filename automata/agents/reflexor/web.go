package reflexor

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/moora-go/moora/automata/agents/reflexor/decl"
	"github.com/moora-go/moora/automata/httpbridge"
)

// The page: index.html, app.js and style.css, which speak to the bridge by
// relative URLs, so that it works under any prefix.
//
//go:embed web
var webFiles embed.FS

// page is the page's files, at the root.
var page = func() fs.FS {
	sub, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the embedded directory is there: go:embed says so
	}
	return sub
}()

// handler serves the page at / and bridge under /agent/.
func handler(bridge http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/agent/", http.StripPrefix("/agent", bridge))
	mux.Handle("/", http.FileServerFS(page))
	return mux
}

// bridgeStreams writes the brain's streamed text to the bridge's token
// streams, one per message id, and to also, if set.
type bridgeStreams struct {
	s    *httpbridge.Streams
	also Streams
}

func (b bridgeStreams) Chunk(id, text string) {
	b.s.Write(id, text)
	if b.also != nil {
		b.also.Chunk(id, text)
	}
}

func (b bridgeStreams) End(id, content string) {
	b.s.End(id)
	if b.also != nil {
		b.also.End(id, content)
	}
}

func (b bridgeStreams) Fail(id, reason string) {
	b.s.Fail(id, reason)
	if b.also != nil {
		b.also.Fail(id, reason)
	}
}

// bridgeConfig is the bridge of a conversation, but for its Auth and
// Streams.
func bridgeConfig() httpbridge.Config[decl.AgentState, decl.AgentInput, decl.ContextOfUser] {
	return httpbridge.Config[decl.AgentState, decl.AgentInput, decl.ContextOfUser]{
		// The timestamp, readOnly in the spec, is the server's: a page
		// leaves it out, and the admission step stamps it.
		Decode: decl.DecodeClientInput,
		// A page speaks for the user, never for the brain or the toolkit,
		// whose inputs only the agent's own jobs dispatch: the bridge
		// refuses theirs with 403. (The default, written out.)
		ClientActors: []string{string(decl.ActorUser)},
		View:         decl.AgentState.ContextOfUser,
		InputID:      inputID,
	}
}

// inputID is the id a client chose for an input, which makes a retried POST
// apply once: a user message's id. Only users post.
func inputID(in decl.AgentInput) string {
	if m, ok := in.(decl.UserSendMessage); ok {
		return m.MessageID
	}
	return ""
}
