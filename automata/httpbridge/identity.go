package httpbridge

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"github.com/moora-go/moora/automata/registry"
)

// Identity is who a request comes from, as FleetConfig.Identify tells.
type Identity = registry.Identity

// Sessions issues and checks bearer tokens that each name an identity of
// their own: a token is "s1.<name>.<HMAC-SHA256 of the name>", under a key
// the program keeps (in its data directory, say), so that tokens outlive
// the process and nothing is stored per identity. Anyone holding a token is
// its identity; there is no expiry and no revocation but changing the key.
type Sessions struct {
	key []byte
}

// NewSessions returns Sessions signing with key, which must be at least 16
// bytes (TokenFile's token is 32).
func NewSessions(key []byte) (*Sessions, error) {
	if len(key) < 16 {
		return nil, errors.New("httpbridge: NewSessions: the key must be at least 16 bytes")
	}
	return &Sessions{key: append([]byte(nil), key...)}, nil
}

const sessionPrefix = "s1."

// Issue makes a new identity and its token. The name is "u-" and 24 random
// hex digits.
func (s *Sessions) Issue() (token, name string) {
	var b [12]byte
	rand.Read(b[:])
	name = "u-" + hex.EncodeToString(b[:])
	return sessionPrefix + name + "." + s.sum(name), name
}

func (s *Sessions) sum(name string) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(name))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Check returns the name of the identity token stands for, or an error if
// Issue did not make it under this key.
func (s *Sessions) Check(token string) (name string, err error) {
	rest, ok := strings.CutPrefix(token, sessionPrefix)
	if !ok {
		return "", errors.New("not a session token")
	}
	name, sum, ok := strings.Cut(rest, ".")
	if !ok || name == "" || len(name) > 64 {
		return "", errors.New("malformed session token")
	}
	if subtle.ConstantTimeCompare([]byte(sum), []byte(s.sum(name))) != 1 {
		return "", errors.New("invalid session token")
	}
	return name, nil
}

// OperatorName is the Identity.Name of the operator in the identities that
// Identities returns.
const OperatorName = "operator"

// Identities returns an Identify hook for FleetConfig: the bearer token
// operatorToken is the operator (Identity{Name: OperatorName, Operator:
// true}); a token that sessions issued (nil: none) is its own identity;
// anything else is refused. An empty operatorToken makes no request the
// operator (not one whose bearer token is empty).
func Identities(operatorToken string, sessions *Sessions) func(r *http.Request) (Identity, error) {
	operator := Bearer(operatorToken)
	return func(r *http.Request) (Identity, error) {
		if operatorToken != "" && operator(r) == nil {
			return Identity{Name: OperatorName, Operator: true}, nil
		}
		tok, err := bearerToken(r)
		if err != nil {
			return Identity{}, err
		}
		if sessions == nil {
			return Identity{}, errors.New("wrong bearer token")
		}
		name, err := sessions.Check(tok)
		if err != nil {
			return Identity{}, err
		}
		return Identity{Name: name}, nil
	}
}
