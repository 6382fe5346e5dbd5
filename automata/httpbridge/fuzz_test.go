package httpbridge

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzParseEventID: any Last-Event-ID is read back as written or refused
// with an error, never a panic; what is accepted prints back the same.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"0", "17", "18446744073709551615", "18446744073709551616", "12-ab01", "-", "1-", "01", "1-AB", " 1", "1x", strings.Repeat("9", 41)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := parseEventID(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if id.String() != s {
			t.Fatalf("%q read as %+v, which prints %q", s, id, id.String())
		}
		if _, err := parseOffset(s); err == nil && strings.Contains(s, "-") {
			t.Fatalf("offset %q accepted", s)
		}
	})
}

// FuzzQueryToken: only a token the bridge signed, unexpired, is accepted.
func FuzzQueryToken(f *testing.F) {
	q := queryTokens{key: []byte("0123456789abcdef0123456789abcdef"), now: func() time.Time { return time.Unix(1_700_000_000, 0) }}
	good, _ := q.issue()
	for _, s := range []string{good, "", ".", "1.", "99999999999.AAAA", good + "x", strings.ToUpper(good)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := q.check(s); err == nil && s != good {
			t.Fatalf("accepted %q, which the bridge did not issue", s)
		}
	})
}

// FuzzPostInput sends arbitrary bodies to POST /inputs: each gets a JSON
// answer with a 2xx or 4xx status, and an input is applied only on 200.
func FuzzPostInput(f *testing.F) {
	for _, s := range []string{
		`{"type":"send-user-message","id":"u1","content":"hi","timestamp":0}`,
		`{"type":"send-user-message","id":"u1","content":5,"timestamp":0}`,
		`{"type":"nope"}`, `{`, `[]`, `null`, `{"type":"send-user-message","id":"u1","content":"hi","timestamp":1e400}`,
		`{"type":"send-assi-message","id":"a","content":"x","timestamp":-1} {}`,
	} {
		f.Add([]byte(s))
	}
	fx := newFixture(f, func(c *Config[state, input, view]) { c.MaxBody = 4096 })
	f.Fuzz(func(t *testing.T, body []byte) {
		before := len(fx.m.Current().UserMessages)
		req := httptest.NewRequest("POST", "/inputs", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		fx.b.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%d for %q: %s", w.Code, body, w.Body)
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("answer is not JSON: %q", w.Body)
		}
		after := len(fx.m.Current().UserMessages)
		if w.Code != http.StatusOK && after != before {
			t.Fatalf("%d, yet the user messages went from %d to %d", w.Code, before, after)
		}
	})
}

// TestQueryTokenIsNotMalleable: a token is accepted in the one spelling
// issue wrote, not with a CR or LF inside its signature (which base64
// decoding skips), nor with other bits in the padding of its last
// character.
func TestQueryTokenIsNotMalleable(t *testing.T) {
	q := queryTokens{key: []byte("0123456789abcdef0123456789abcdef"), now: func() time.Time { return time.Unix(1_700_000_000, 0) }}
	good, _ := q.issue()
	if err := q.check(good); err != nil {
		t.Fatalf("the token issued: %v", err)
	}
	dot := strings.IndexByte(good, '.')
	last := good[len(good)-1]
	// The last of 43 characters carries 2 bits of the signature and 4 of
	// padding: the characters with the same first 2 bits decode alike.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, last)
	variant := good[:len(good)-1] + string(alphabet[i^1])
	for name, tok := range map[string]string{
		"CR in the signature":   good[:dot+5] + "\r" + good[dot+5:],
		"LF in the signature":   good[:dot+5] + "\n" + good[dot+5:],
		"other padding bits":    variant,
		"CRLF at the end":       good + "\r\n",
		"a space in the middle": good[:dot+5] + " " + good[dot+5:],
	} {
		if err := q.check(tok); err == nil {
			t.Errorf("%s: %q accepted", name, tok)
		}
	}
}

// FuzzChatEventID: any Last-Event-ID of a chat stream is read as a cursor
// and a message id, or refused with an error, never a panic; what is
// accepted is written back as an id that reads the same.
func FuzzChatEventID(f *testing.F) {
	for _, s := range []string{"0.0.0.0:u1", "3.2.17.1:u%201", "end:u1", "end:", "1.3.0.0:u", "1.1.1:u", "-1.0.0.0:u", "1.0.0.0", ":", "9999999999.0.0.0:u", "0.0.0.0:%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, c, err := parseChatEventID(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if id == "" || !c.started {
			t.Fatalf("%q read as %q %+v", s, id, c)
		}
		id2, c2, err := parseChatEventID(c.eventID(id))
		if err != nil || id2 != id || c2 != c {
			t.Fatalf("%q read as %q %+v, written as %q, read back as %q %+v (%v)", s, id, c, c.eventID(id), id2, c2, err)
		}
	})
}

// FuzzPostChat sends arbitrary bodies to POST /chat: each is answered with
// a 2xx or 4xx status (a JSON error, or the reply's stream to its end), and
// a message is journaled only on 200.
func FuzzPostChat(f *testing.F) {
	for _, s := range []string{
		chatBody("u1", "hi"), `{"messages":[]}`, `{`, `null`, `[]`, `{"messages":[null]}`,
		`{"messages":[{"id":"u2","role":"user","parts":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
		`{"trigger":"regenerate-message","messages":[{"id":"u1","role":"user","parts":[]}]}`,
		`{"messages":[{"id":"u3","role":"user","parts":[{"type":"text","text":5}]}]}`,
	} {
		f.Add([]byte(s))
	}
	fx := newFixture(f, func(c *Config[state, input, view]) { c.Chat = testChat(); c.Chat.MaxBody = 4096 })
	f.Fuzz(func(t *testing.T, body []byte) {
		before := fx.m.Seq()
		req := httptest.NewRequest("POST", "/chat", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		fx.b.ServeHTTP(w, req)
		switch {
		case w.Code >= 500:
			t.Fatalf("%d for %q: %s", w.Code, body, w.Body)
		case w.Code == http.StatusOK:
			if !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
				t.Fatalf("a stream that did not end: %q", w.Body)
			}
		default:
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("answer is not JSON: %q", w.Body)
			}
			if fx.m.Seq() != before {
				t.Fatalf("%d, yet the journal went from %d to %d", w.Code, before, fx.m.Seq())
			}
		}
	})
}
