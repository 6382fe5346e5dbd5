package journal

import (
	"fmt"
	"testing"
)

// BenchmarkStateDigest measures the digest of a state (its JSON, hashed):
// what DigestEvery costs each input, for a state of that size. The state is
// a log of n notes of a chat message's length.
func BenchmarkStateDigest(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("notes=%d", n), func(b *testing.B) {
			state := struct {
				Notes []string `json:"notes"`
			}{}
			for i := range n {
				state.Notes = append(state.Notes, fmt.Sprintf("note %d: a chat message of a typical length, some sixty characters.", i))
			}
			_, size, err := stateDigest(state)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := stateDigest(state); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
