package httpbridge

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Bearer returns an Auth hook that accepts a request carrying
// "Authorization: Bearer <token>".
func Bearer(token string) func(*http.Request) error {
	want := []byte(token)
	return func(r *http.Request) error {
		got, err := bearerToken(r)
		if err != nil {
			return err
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			return errors.New("wrong bearer token")
		}
		return nil
	}
}

// bearerToken returns the token of r's "Authorization: Bearer <token>".
func bearerToken(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" {
		return "", errors.New("missing Authorization header (want Bearer <token>)")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", errors.New("the Authorization header is not Bearer <token>")
	}
	return token, nil
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
	// Only the one spelling issue writes: the decoder skips CR and LF, and
	// without Strict accepts other bits in the last character's padding.
	notURL := func(r rune) bool {
		return !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '_')
	}
	if len(sig) != 43 || strings.ContainsFunc(sig, notURL) {
		return errors.New("query token: the signature is not 43 base64url characters")
	}
	mac, err := base64.RawURLEncoding.Strict().DecodeString(sig)
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

// TokenFile returns the bearer token kept in the file at path, making one
// when the file does not exist: 32 random hex digits, written with mode
// 0600. A program that serves an agent from a data directory keeps its
// token there, so that a restart, even after a crash, keeps the pages that
// are open authorized. A file that exists but holds no token (empty, or
// white space) is an error naming it, not replaced: someone made it.
//
// The token appears whole or not at all: it is written to a temporary file
// beside path, which is then linked to path unless path exists. Of two
// programs starting at once, one makes the token and the other reads it.
func TokenFile(path string) (string, error) {
	if token, err := readToken(path); !errors.Is(err, fs.ErrNotExist) {
		return token, err
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("httpbridge: making a token: %w", err)
	}
	token := hex.EncodeToString(b)
	f, err := os.CreateTemp(filepath.Dir(path), ".token-*") // mode 0600
	if err != nil {
		return "", fmt.Errorf("httpbridge: keeping the token: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(token + "\n")
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return "", fmt.Errorf("httpbridge: keeping the token: %w", err)
	}
	if err := os.Link(f.Name(), path); errors.Is(err, fs.ErrExist) {
		return readToken(path) // another program's, whole
	} else if err != nil {
		return "", fmt.Errorf("httpbridge: keeping the token: %w", err)
	}
	return token, nil
}

// readToken reads the token kept in the file at path.
func readToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("httpbridge: reading the token: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" || strings.ContainsAny(token, " \t\r\n") {
		return "", fmt.Errorf("httpbridge: %s holds no token (want one line, the token)", path)
	}
	return token, nil
}
