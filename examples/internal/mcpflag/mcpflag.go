// Package mcpflag is the -mcp flag of the examples: the MCP servers whose
// tools an agent's toolkit mounts (package automata/toolkit/mcp), each a
// command run over stdio or the URL of a server over Streamable HTTP; and
// how the examples' offline models call such a tool (ToolAsked).
package mcpflag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/automata/toolkit/mcp"
)

// Usage is the flag's usage line.
const Usage = "mount the tools of an MCP server: a command run over stdio (split at spaces, no shell: 'npx -y @modelcontextprotocol/server-everything'), or the URL of a server over Streamable HTTP; repeat for more"

// List is the flag's values, in order: a flag.Value.
type List []string

func (l *List) String() string { return strings.Join(*l, ", ") }

// Set adds a server.
func (l *List) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("an empty server: want a command or a URL")
	}
	if u, ok := httpURL(s); ok && u.Host == "" {
		return fmt.Errorf("%q: a URL with no host", s)
	}
	*l = append(*l, s)
	return nil
}

// httpURL says whether s is an http or https URL.
func httpURL(s string) (*url.URL, bool) {
	u, err := url.Parse(s)
	return u, err == nil && (u.Scheme == "http" || u.Scheme == "https")
}

// Config is what a server of the list is mounted as: named after its
// command or its host (and its place in the list when two would share a
// name), its tools prefixed with that name and "_" where the kit has their
// names already.
func (l List) Config(i int) mcp.Config {
	s := l[i]
	var cfg mcp.Config
	if u, ok := httpURL(s); ok {
		cfg.URL, cfg.Name = s, u.Hostname()
	} else {
		f := strings.Fields(s)
		cfg.Command, cfg.Args, cfg.Name = f[0], f[1:], filepath.Base(f[0])
		if cfg.Name == "npx" || cfg.Name == "node" || cfg.Name == "uvx" {
			for _, a := range f[1:] { // the package it runs names it better
				if !strings.HasPrefix(a, "-") {
					cfg.Name = filepath.Base(a)
					break
				}
			}
		}
	}
	cfg.Name = strings.Trim(nonName.ReplaceAllString(strings.ToLower(cfg.Name), "_"), "_")
	if cfg.Name == "" {
		cfg.Name = "mcp"
	}
	for j := range i {
		if l.Config(j).Name == cfg.Name {
			cfg.Name = fmt.Sprintf("%s%d", cfg.Name, i+1)
			break
		}
	}
	cfg.Prefix = cfg.Name + "_"
	return cfg
}

var nonName = regexp.MustCompile(`[^a-z0-9_]+`)

// Mount mounts the servers of l in kit, and waits up to wait for each to
// list its tools, so that the agent's first request offers them: a server
// not ready by then is said so on the log, and its tools join the kit when
// it is. closeAll stops them.
func (l List) Mount(kit *toolkit.Kit, logger *slog.Logger, wait time.Duration) (closeAll func(), err error) {
	var servers []*mcp.Server
	closeAll = func() {
		for _, s := range servers {
			s.Close()
		}
	}
	for i := range l {
		cfg := l.Config(i)
		cfg.Logger = logger
		s, err := mcp.Mount(kit, cfg)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("-mcp %q: %w", l[i], err)
		}
		servers = append(servers, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for i, s := range servers {
		if err := s.Ready(ctx); err != nil {
			logger.Warn("an MCP server is not ready; its tools join when it is", "mcp.server", l.Config(i).Name, "error", err)
		}
	}
	return closeAll, nil
}

// callTool is a message that asks for a tool by name: "call TOOL", then its
// JSON arguments, if any.
var callTool = regexp.MustCompile(`(?is)^\s*call\s+([A-Za-z0-9_.-]{1,64})\s*(\{.*\})?\s*$`)

// ToolAsked is how the examples' offline models call any tool they are
// offered, an MCP server's among them: it returns the tool a user's message
// asks for ("call echo {\"message\": \"hi\"}") and its arguments, if the
// request offers that tool and the arguments are JSON.
func ToolAsked(req llm.Request, message string) (string, json.RawMessage, bool) {
	m := callTool.FindStringSubmatch(message)
	if m == nil {
		return "", nil, false
	}
	args := json.RawMessage(m[2])
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		return "", nil, false
	}
	for _, t := range req.Tools {
		if t.Name == m[1] {
			return t.Name, args, true
		}
	}
	return "", nil, false
}
