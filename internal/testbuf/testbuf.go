// Package testbuf is a buffer that a program under test (a logger, a
// command's output) writes while the test reads it.
package testbuf

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent use: Write from the program,
// String and Wait from the test. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Wait waits until the buffer holds want, and fails the test with what it
// holds if it does not within guard (a hang guard, not a timing
// assertion).
func (b *Buffer) Wait(t testing.TB, want string, guard time.Duration) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("never written: %q; written:\n%s", want, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
