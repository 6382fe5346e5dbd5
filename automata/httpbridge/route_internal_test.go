package httpbridge

import (
	"strings"
	"testing"
	"time"
)

// TestRoutedHeaderIsSigned: a routed header passes only as a peer signed
// it, with the peers' secret, within routedSkew of the receiver's clock;
// anything else, a client's forgery, does not.
func TestRoutedHeaderIsSigned(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	good := routedValue(secret, "host-a:4242", now)
	owner64, rest, _ := strings.Cut(good, ".")
	at, mac, _ := strings.Cut(rest, ".")
	for _, c := range []struct {
		name  string
		value string
		now   time.Time
		want  bool
	}{
		{"signed", good, now, true},
		{"signed, the receiver's clock 5 min behind", good, now.Add(-routedSkew), true},
		{"signed, the receiver's clock 5 min ahead", good, now.Add(routedSkew), true},
		{"too old", good, now.Add(routedSkew + time.Second), false},
		{"from the future", good, now.Add(-routedSkew - time.Second), false},
		{"another secret", routedValue([]byte("fedcba9876543210fedcba9876543210"), "host-a:4242", now), now, false},
		{"another owner under the MAC", "aG9zdC1i." + at + "." + mac, now, false},
		{"another time under the MAC", owner64 + ".1800000001." + mac, now, false},
		{"a peer's id, as it was sent before", "host-a", now, false},
		{"empty parts", "..", now, false},
		{"huge", strings.Repeat("a", 1000), now, false},
	} {
		if got := routedByPeer(secret, c.value, c.now); got != c.want {
			t.Errorf("%s: %q passes %v, want %v", c.name, c.value, got, c.want)
		}
	}
	if routedByPeer(secret[:8], routedValue(secret[:8], "host-a", now), now) {
		t.Error("a secret of 8 bytes signs")
	}
}
