package versions

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHistoryLimits: a history past its limits is an error that says so,
// read no further than the limit.
func TestHistoryLimits(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"versions": [`)
	for i := range MaxValues + 1 {
		if i > 0 {
			b.WriteString(",\n") // a line a value, as histories are written
		}
		b.WriteByte('0')
	}
	b.WriteString(`]}`)
	_, err := Parse("agent.history.json", b.Bytes())
	if err == nil || !strings.Contains(err.Error(), "more than 2000000 values") {
		t.Fatalf("Parse of %d values = %v, want the limit", MaxValues+2, err)
	}

	file := filepath.Join(t.TempDir(), "agent.history.json")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxBytes + 10); err != nil { // sparse: no disk is used
		t.Fatal(err)
	}
	f.Close()
	_, err = Read(file)
	if err == nil || !strings.Contains(err.Error(), "more than the 268435456 a history may be") {
		t.Fatalf("Read of %d bytes = %v, want the limit", MaxBytes+10, err)
	}
}

// TestVersionSpecBuildsTheModel: a version whose spec passes the spec
// schema but not the model's checks (a $ref to no type) is an error, not a
// spec the classifier compares and finds nothing in.
func TestVersionSpecBuildsTheModel(t *testing.T) {
	h, err := Parse("agent.history.json", []byte(`{"versions": [{"version": 1, "spec": {
  "version": 1, "actors": ["user"],
  "observations": {"user": {"user": {"n": {"$ref": "#/$defs/Nope"}}}},
  "inputs": {"user": {"inc": {"type": "object"}}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Versions[0].Spec()
	if err == nil || !strings.Contains(err.Error(), "version 1 of the spec in the history") || !strings.Contains(err.Error(), "agent.history.json:3:") || !strings.Contains(err.Error(), "Nope") {
		t.Fatalf("Spec() = %v, want the dangling $ref at its line of the history", err)
	}
	if _, err := h.Versions[0].Model("example.com/agent"); err == nil {
		t.Fatal("Model of an invalid version")
	}
}
