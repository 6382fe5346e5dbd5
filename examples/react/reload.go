package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/moora-go/moora/examples/react/decl"
)

// configs holds the configuration in force: the built-in one (react.yaml as
// the command was built), or the file of -config, reloaded when it changes.
// A new configuration is given to every run in progress (runs.reconfigure),
// and every run after it starts under it; a file that is not valid is
// refused, and the configuration in force stays.
type configs struct {
	file  string        // "" for the built-in configuration, which never changes
	tools []string      // the toolkit's tools, which a configuration may enable
	every time.Duration // how often the file is looked at; 0: configPoll

	mu      sync.Mutex
	cur     decl.Config
	refused string // why the file's newest content was refused, if it was
}

// configPoll is how often the configuration file is looked at.
const configPoll = time.Second

// loadConfigs loads the configuration file, or the built-in configuration
// when file is "". A file that is not valid stops the command: the error
// says where.
func loadConfigs(file string, tools []string) (*configs, error) {
	c := &configs{file: file, tools: tools}
	if file == "" {
		c.cur = builtinConfig()
		return c, nil
	}
	cfg, err := LoadConfig(file, tools)
	if err != nil {
		return nil, err
	}
	c.cur = cfg
	return c, nil
}

// current returns the configuration in force.
func (c *configs) current() decl.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// status returns the configuration in force, and why the file's newest
// content was refused ("" when it was not).
func (c *configs) status() (decl.Config, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur, c.refused
}

// watch reloads the file whenever it changes, until ctx ends: a valid one
// is put in force for rs's runs, and said on log; one that is not is
// refused, and said on log with its file:line.
func (c *configs) watch(ctx context.Context, rs *runs, log io.Writer) {
	if c.file == "" {
		return
	}
	every := c.every
	if every <= 0 {
		every = configPoll
	}
	WatchConfig(ctx, c.file, every, c.tools, func(cfg decl.Config) {
		c.mu.Lock()
		if cfg.Digest == c.cur.Digest {
			c.refused = ""
			c.mu.Unlock()
			return
		}
		c.cur, c.refused = cfg, ""
		c.mu.Unlock()
		fmt.Fprintf(log, "react: configuration %s (sha256 %.12s) in force\n", cfg.Source, cfg.Digest)
		rs.reconfigure()
	}, func(err error) {
		c.mu.Lock()
		c.refused = err.Error()
		digest := c.cur.Digest
		c.mu.Unlock()
		fmt.Fprintf(log, "react: configuration refused, sha256 %.12s stays in force:\n%v\n", digest, err)
	})
}

// toolNames are the names of work's tools.
func toolNames(work Work) []string {
	var names []string
	for _, t := range work.Toolkit.LLMTools() {
		names = append(names, t.Name)
	}
	return names
}
