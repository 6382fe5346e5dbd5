package backend_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/journal"
	"github.com/moora-go/moora/automata/journal/internal/backend"
)

// TestPassedOver: no agent passed over is no error; one is its own
// *CorruptError; more say how many more, and wrap the first.
func TestPassedOver(t *testing.T) {
	var p backend.PassedOver
	if err := p.Err(); err != nil {
		t.Fatalf("nothing passed over: %v", err)
	}
	first := &journal.CorruptError{Err: errors.New("agent a: bad meta")}
	p.Add(first)
	if err := p.Err(); err != first {
		t.Fatalf("one passed over: %v, want its own error", err)
	}
	p.Add(errors.New("agent b: not a CorruptError"))
	p.Add(&journal.CorruptError{Err: errors.New("agent c")})
	err := p.Err()
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "agent a: bad meta; and 2 more damaged agents were passed over") {
		t.Fatalf("three passed over: %v", err)
	}
	var q backend.PassedOver
	q.Add(errors.New("plain"))
	if !errors.As(q.Err(), &ce) {
		t.Fatalf("a plain error passed over is not a *CorruptError: %v", q.Err())
	}
}
