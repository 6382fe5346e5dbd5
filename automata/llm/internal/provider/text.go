package provider

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ParseRetryAfter reads how long a server asks a client to wait: the
// Retry-After-Ms header (milliseconds, OpenAI's), else Retry-After
// (seconds, or an HTTP date). It returns 0 when neither says, or when what
// they say is not a wait this side of the year 2262.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	seconds := func(v string, unit time.Duration) time.Duration {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(f > 0) || f*float64(unit) >= math.MaxInt64 {
			return 0
		}
		return time.Duration(f * float64(unit))
	}
	if d := seconds(h.Get("Retry-After-Ms"), time.Millisecond); d > 0 {
		return d
	}
	v := h.Get("Retry-After")
	if d := seconds(v, time.Second); d > 0 {
		return d
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now) // saturates at the largest Duration
	}
	return 0
}

// MaxMessage bounds the server's words in an error message.
const MaxMessage = 300

// OneLine makes s fit on one line: control characters and runs of white
// space become one space, and it is cut to MaxMessage bytes.
func OneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= MaxMessage {
		return s
	}
	cut := MaxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
