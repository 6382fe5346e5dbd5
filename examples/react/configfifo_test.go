//go:build unix

package main

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moora-go/moora/examples/react/decl"
)

// TestConfigFIFOIsRefused: a FIFO at the configuration's path is refused at
// once, by LoadConfig and by the watcher, which goes on watching: a
// regular file put in its place is applied.
func TestConfigFIFOIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "react.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	loaded := make(chan error, 1)
	go func() {
		_, err := LoadConfig(path, demoToolNames())
		loaded <- err
	}()
	select {
	case err := <-loaded:
		if err == nil || !strings.Contains(err.Error(), "is not a regular file") {
			t.Errorf("LoadConfig of a FIFO = %v, want an error saying it is not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LoadConfig of a FIFO still waits after 10 s")
	}

	applied := make(chan decl.Config, 10)
	refused := make(chan error, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go WatchConfig(ctx, path, 10*time.Millisecond, demoToolNames(), func(c decl.Config) { applied <- c }, func(err error) { refused <- err })
	select {
	case err := <-refused:
		if !strings.Contains(err.Error(), "is not a regular file") {
			t.Errorf("the watcher refused the FIFO with %v, want: not a regular file", err)
		}
	case c := <-applied:
		t.Fatalf("the watcher applied %s from a FIFO", c.Digest)
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher said nothing of the FIFO after 10 s")
	}
	writeWhole(t, path, testConfig, time.Now())
	select {
	case <-applied:
	case err := <-refused:
		t.Fatalf("refused the regular file: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the regular file in the FIFO's place was not applied after 10 s")
	}
}
