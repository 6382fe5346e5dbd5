package httpbridge

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Bearer returns an Auth hook that accepts a request carrying
// "Authorization: Bearer <token>".
func Bearer(token string) func(*http.Request) error {
	want := []byte(token)
	return func(r *http.Request) error {
		h := r.Header.Get("Authorization")
		scheme, got, ok := strings.Cut(h, " ")
		if h == "" {
			return errors.New("missing Authorization header (want Bearer <token>)")
		}
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return errors.New("the Authorization header is not Bearer <token>")
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			return errors.New("wrong bearer token")
		}
		return nil
	}
}

// AllowAll is an Auth hook that accepts every request: for a bridge on a
// trusted network, or behind a proxy that authenticates.
func AllowAll(*http.Request) error { return nil }

// queryTokenTTL is how long a query token may open a stream.
const queryTokenTTL = time.Minute

// queryTokens signs and checks short-lived query tokens:
// "<expiry, Unix seconds>.<base64url HMAC-SHA256 of the expiry>", with a
// key that lives as long as the bridge.
type queryTokens struct {
	key []byte
	now func() time.Time
}

func (q queryTokens) issue() (string, time.Time) {
	exp := q.now().Add(queryTokenTTL).Truncate(time.Second)
	e := strconv.FormatInt(exp.Unix(), 10)
	return e + "." + base64.RawURLEncoding.EncodeToString(q.sum(e)), exp
}

func (q queryTokens) sum(e string) []byte {
	m := hmac.New(sha256.New, q.key)
	m.Write([]byte("httpbridge query token\x00"))
	m.Write([]byte(e))
	return m.Sum(nil)
}

// check accepts a token that issue made and that has not expired.
func (q queryTokens) check(tok string) error {
	if len(tok) > 64 {
		return fmt.Errorf("query token of %d bytes: too long", len(tok))
	}
	e, sig, ok := strings.Cut(tok, ".")
	if !ok {
		return errors.New("query token: want <expiry>.<signature>")
	}
	if e == "" || len(e) > 12 || strings.TrimLeft(e, "0123456789") != "" {
		return errors.New("query token: the expiry is not decimal seconds")
	}
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(mac) != sha256.Size {
		return errors.New("query token: the signature is not 43 base64url characters")
	}
	if !hmac.Equal(mac, q.sum(e)) {
		return errors.New("query token: bad signature (from another server, or altered)")
	}
	exp, _ := strconv.ParseInt(e, 10, 64) // 12 digits fit
	if !q.now().Before(time.Unix(exp, 0)) {
		return errors.New("query token: expired (fetch a new one from /token)")
	}
	return nil
}
