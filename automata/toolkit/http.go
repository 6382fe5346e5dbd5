package toolkit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// maxErrorBody bounds how much of an error response's body an error
// quotes.
const maxErrorBody = 1 << 10

// post runs one try of an HTTP tool's call.
func (k *Kit) post(ctx context.Context, e *entry, c Call) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(c.Arguments))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/plain, application/json")
	if c.Key != "" {
		req.Header.Set("Idempotency-Key", c.Key)
	}
	resp, err := k.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s: %w", e.name, err)
	}
	defer resp.Body.Close()
	// One byte over the limit, so that truncate says the output was cut.
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(e.policy.MaxResultBytes)+1))
	if err != nil {
		return "", fmt.Errorf("%s: reading the response: %w", e.name, err)
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return string(body), nil
	case code == http.StatusBadRequest || code == http.StatusUnprocessableEntity:
		return "", fmt.Errorf("%w: %s answered %s%s", ErrInvalid, e.name, resp.Status, quote(body))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return "", fmt.Errorf("%w: %s answered %s%s", ErrPermission, e.name, resp.Status, quote(body))
	default:
		return "", fmt.Errorf("%s answered %s%s", e.name, resp.Status, quote(body))
	}
}

// quote is the start of an error response's body, for an error message.
func quote(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return ""
	}
	if len(s) > maxErrorBody {
		cut := maxErrorBody
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return ": " + s
}
