package mcpserve

import (
	"context"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/moora-go/moora/automata/httpbridge"
)

// ServeStdio serves agent b over MCP on standard input and output, for a
// single local agent that an MCP client starts as a program of its own
// (Claude Desktop's "command"), until the client closes its end or ctx is
// done. The tools and the resource are those of Front; there is no HTTP,
// so no Host check, no sessions to bound (the one session is the
// process's) and no Auth: whoever starts the program talks to the agent.
// Nothing else may write to standard output meanwhile (log to standard
// error).
func ServeStdio[S, I, V any](ctx context.Context, b *httpbridge.Bridge[S, I, V], cfg Config[I, V]) error {
	return ServeIO(ctx, b, cfg, os.Stdin, os.Stdout)
}

// ServeIO is ServeStdio over r and w: newline-delimited JSON-RPC
// messages, at most DefaultMaxLineLength bytes each.
func ServeIO[S, I, V any](ctx context.Context, b *httpbridge.Bridge[S, I, V], cfg Config[I, V], r io.ReadCloser, w io.WriteCloser) error {
	if err := cfg.check(); err != nil {
		return err
	}
	doc, err := parseSchema(cfg.Schema)
	if err != nil {
		return err
	}
	a, err := newAgentServer(b, doc, &cfg)
	if err != nil {
		return err
	}
	a.start()
	return a.server.Run(ctx, &mcp.IOTransport{Reader: r, Writer: w})
}

// DefaultMaxLineLength bounds a message on standard input (the SDK's
// bound): a longer one ends the session.
const DefaultMaxLineLength = mcp.DefaultMaxLineLength
