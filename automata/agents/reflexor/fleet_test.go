package reflexor

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/journal/bolt"
)

// TestNewFleetRefusesWhatItDoesNotUse: a fleet's conversations have their
// stores in the fleet, the operator's token and the people's identities,
// and stream to the pages only: a Store, Token or Streams in
// FleetConfig.Agent would be ignored, so NewFleet refuses them, and closes
// the fleet it was given.
func TestNewFleetRefusesWhatItDoesNotUse(t *testing.T) {
	dir := t.TempDir()
	one, err := bolt.Open(filepath.Join(dir, "one.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	cases := []struct {
		name  string
		agent Config
		want  string
	}{
		{"store", Config{Model: testBrain(0), Store: one}, "FleetConfig.Agent.Store"},
		{"token", Config{Model: testBrain(0), Token: "t"}, "FleetConfig.Agent.Token"},
		{"streams", Config{Model: testBrain(0), Streams: discardStreams{}}, "FleetConfig.Agent.Streams"},
		{"no model", Config{}, "Config.Model is nil"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agents.db")
			fleet, err := bolt.OpenFleet(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = NewFleet(FleetConfig{Agent: c.agent, Fleet: fleet, Token: "operator", SessionKey: []byte("0123456789abcdef0123")})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewFleet: %v, want an error naming %s", err, c.want)
			}
			again, err := bolt.OpenFleet(path)
			if err != nil {
				t.Fatalf("opening the fleet's file again after NewFleet failed: %v", err)
			}
			again.Close()
		})
	}
}

type discardStreams struct{}

func (discardStreams) Chunk(string, string) {}
func (discardStreams) End(string, string)   {}
func (discardStreams) Fail(string, string)  {}
