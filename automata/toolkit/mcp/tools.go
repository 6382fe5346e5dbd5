package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/moora-go/moora/automata/toolkit"
)

// list fetches the server's tools over cs and makes them the mount's: at
// most MaxTools of them (an endless list is not read to its end).
func (s *Server) list(ctx context.Context, cs *sdk.ClientSession) error {
	var tools []toolkit.Tool
	more := false
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		if len(tools) == s.cfg.MaxTools {
			more = true
			break
		}
		tools = append(tools, s.tool(t))
	}
	if more {
		s.log.Warn("mcp server has more tools than MaxTools: the others are left out", "max_tools", s.cfg.MaxTools)
	}
	if s.ctx.Err() != nil {
		return nil // closed meanwhile
	}
	if err := s.mount.Set(tools...); err != nil {
		s.log.Warn("mcp server tools left out", "error", err)
	}
	return nil
}

// tool makes the toolkit's tool of the server's tool t: its schema as the
// server gave it, its name with what a chat API refuses as '_'.
func (s *Server) tool(t *sdk.Tool) toolkit.Tool {
	var params json.RawMessage
	if t.InputSchema != nil {
		// The SDK decoded it (into a map): encoded again, it says the
		// same, its keys sorted.
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			b = []byte("null") // New says it is no schema
		}
		params = b
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return toolkit.Remote(toolName(t.Name), desc, params, s.call(t.Name)).With(s.cfg.Policy)
}

// toolName is an MCP tool's name as a chat API takes it: each character
// that is not a letter, a digit, '_' or '-' (MCP allows '.' and '/', say)
// is '_'. One longer than 64 bytes is left out by the kit.
func toolName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
}

// call is what runs a try of a call of the server's tool name.
func (s *Server) call(name string) func(ctx context.Context, args json.RawMessage) (string, error) {
	return func(ctx context.Context, args json.RawMessage) (string, error) {
		cs, err := s.session()
		if err != nil {
			return "", s.redact(err)
		}
		p := &sdk.CallToolParams{Name: name, Arguments: args}
		if key := toolkit.Key(ctx); key != "" {
			p.Meta = sdk.Meta{MetaKey: key, MetaAttempt: toolkit.Attempt(ctx)}
		}
		res, err := cs.CallTool(ctx, p)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			// The try's time ran out, or the call was cancelled: the
			// kit says which.
			return "", ctx.Err()
		case isCode(err, jsonrpc.CodeInvalidParams):
			return "", fmt.Errorf("%w: mcp server %q refused the arguments of %s: %v", toolkit.ErrInvalid, s.cfg.Name, name, s.redact(err))
		case answered(err):
			return "", fmt.Errorf("mcp server %q answered the call of %s with an error: %w", s.cfg.Name, name, s.redact(err))
		default:
			// No answer: the connection is broken, or looks so, which
			// the supervisor checks (and starts a new session if so).
			signal(s.suspect)
			again := "started again"
			if s.cfg.URL != "" {
				again = "reached again"
			}
			return "", s.isDown(fmt.Errorf("the call of %s got no answer (%w); it is %s", name, s.redact(err), again))
		}
		out := render(res)
		if res.IsError {
			return "", fmt.Errorf("%s failed: %s", name, out)
		}
		return out, nil
	}
}

// answered says whether err is the server's answer to a call: a JSON-RPC
// error of a code that is not one of the range the JSON-RPC spec keeps for
// implementations (-32000 to -32099), which the SDK uses for a connection
// that closed or a request the transport refused, and servers for a
// session they do not know.
func answered(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && (we.Code > -32000 || we.Code < -32099)
}

// render is what the model is told of a tool's result: its content,
// each block on lines of its own — text as it is; an image or audio
// described (its type and size: a tool result is text, which cannot show
// it); a link to a resource as its URI, name and description; an embedded
// resource as its URI and type, then its text, or a description of its
// blob. A result of structured content only is that content, as JSON.
func render(res *sdk.CallToolResult) string {
	var b strings.Builder
	for i, c := range res.Content {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch c := c.(type) {
		case *sdk.TextContent:
			b.WriteString(c.Text)
		case *sdk.ImageContent:
			fmt.Fprintf(&b, "[image: %s, %d bytes, not shown]", or(c.MIMEType, "of no type"), len(c.Data))
		case *sdk.AudioContent:
			fmt.Fprintf(&b, "[audio: %s, %d bytes, not played]", or(c.MIMEType, "of no type"), len(c.Data))
		case *sdk.ResourceLink:
			fmt.Fprintf(&b, "[resource link: %s", c.URI)
			if c.Name != "" {
				fmt.Fprintf(&b, " (%s)", c.Name)
			}
			if c.MIMEType != "" {
				fmt.Fprintf(&b, ", %s", c.MIMEType)
			}
			if c.Description != "" {
				fmt.Fprintf(&b, ": %s", c.Description)
			}
			b.WriteByte(']')
		case *sdk.EmbeddedResource:
			r := c.Resource
			if r == nil {
				b.WriteString("[resource: empty]")
				break
			}
			fmt.Fprintf(&b, "[resource: %s", r.URI)
			if r.MIMEType != "" {
				fmt.Fprintf(&b, ", %s", r.MIMEType)
			}
			if r.Blob != nil {
				fmt.Fprintf(&b, ", %d bytes of binary data, not shown]", len(r.Blob))
				break
			}
			b.WriteString("]\n")
			b.WriteString(r.Text)
		default:
			j, err := json.Marshal(c)
			if err != nil {
				fmt.Fprintf(&b, "[content of type %T]", c)
				break
			}
			b.Write(j)
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if j, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(j)
		}
	}
	return b.String()
}
