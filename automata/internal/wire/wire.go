// Package wire holds what the HTTP surfaces of package automata
// (httpbridge, devpanel) write alike: JSON responses and server-sent
// events.
package wire

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Error is the body of every error response.
type Error struct {
	Error string `json:"error"`
}

// WriteJSON writes v as the JSON body of a response with status, not to be
// cached.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// WriteError writes an Error with the formatted message.
func WriteError(w http.ResponseWriter, status int, format string, args ...any) {
	WriteJSON(w, status, Error{Error: fmt.Sprintf(format, args...)})
}

// AppendEvent appends one server-sent event to dst: its id (when not
// empty), its name and its data, which is one line of JSON.
func AppendEvent(dst []byte, id, event string, data []byte) []byte {
	if id != "" {
		dst = append(dst, "id: "...)
		dst = append(dst, id...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "event: "...)
	dst = append(dst, event...)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, data...)
	return append(dst, "\n\n"...)
}

// Truncate returns s cut to n bytes, with an ellipsis when it was longer:
// for echoing what a client sent in an error message.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
