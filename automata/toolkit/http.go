package toolkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxErrorBody bounds how much of an error response's body an error
// quotes.
const maxErrorBody = 1 << 10

// post runs one try of an HTTP tool's call.
func (k *Kit) post(ctx context.Context, e *entry, c Call) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(c.Arguments))
	if err != nil {
		return "", fmt.Errorf("%s: %w", e.name, withoutURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/plain, application/json")
	if c.Key != "" {
		req.Header.Set("Idempotency-Key", c.Key)
	}
	resp, err := k.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s: %w", e.name, withoutURL(err))
	}
	defer resp.Body.Close()
	// One byte over the limit, so that truncate says the output was cut.
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(e.policy.MaxResultBytes)+1))
	if err != nil {
		return "", fmt.Errorf("%s: reading the response: %w", e.name, withoutURL(err))
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return string(body), nil
	case code >= 300 && code < 400:
		// The kit's client does not follow redirects (New). Neither
		// where to nor the body is quoted: they may name what the
		// model is not to see.
		return "", fmt.Errorf("%s answered %s, a redirect, which is not followed", e.name, resp.Status)
	case code == http.StatusBadRequest || code == http.StatusUnprocessableEntity:
		return "", fmt.Errorf("%w: %s answered %s%s", ErrInvalid, e.name, resp.Status, quote(body))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return "", fmt.Errorf("%w: %s answered %s%s", ErrPermission, e.name, resp.Status, quote(body))
	default:
		return "", fmt.Errorf("%s answered %s%s", e.name, resp.Status, quote(body))
	}
}

// withoutURL is err without the *url.Error that names the request's URL,
// whose query may hold a secret: the model is told the cause only.
func withoutURL(err error) error {
	var ue *url.Error
	for errors.As(err, &ue) {
		if ue.Err == nil {
			return errors.New(strings.ToLower(ue.Op) + " failed")
		}
		err = ue.Err
	}
	return err
}

// quote is the start of an error response's body, for an error message.
func quote(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return ""
	}
	return ": " + clip(s, maxErrorBody)
}
