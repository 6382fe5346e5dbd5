package a2aserve

import (
	"encoding/json"
	"testing"
)

// FuzzParseRequest: the request parser never panics; what it accepts has
// a method and an id that is a JSON string or number, params an object
// or none; and its answer, error or not, is JSON-RPC that carries the id.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"GetTask","params":{"id":"self"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`,
		`{"jsonrpc":"2.0","method":"GetTask"}`,
		`{"jsonrpc":"2.0","id":null,"method":"GetTask"}`,
		`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[]}`,
		`{"jsonrpc":"1.0","id":1,"method":""}`,
		`{"id":-1.5e3,"jsonrpc":"2.0","method":"x","params":null}`,
		`"just a string"`, ``, `{`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, e := parseRequest(data)
		if e == nil {
			if req.Method == "" || len(req.ID) == 0 || !json.Valid(req.ID) {
				t.Fatalf("accepted %q: method %q id %q", data, req.Method, req.ID)
			}
			var id any
			json.Unmarshal(req.ID, &id)
			switch id.(type) {
			case string, float64:
			default:
				t.Fatalf("accepted %q: id %s", data, req.ID)
			}
			if len(req.Params) > 0 && req.Params[0] != '{' {
				t.Fatalf("accepted %q: params %s", data, req.Params)
			}
		} else if e.Code >= 0 || e.Message == "" {
			t.Fatalf("%q: error %+v", data, e)
		}
		out := response(req.ID, map[string]string{"ok": "yes"}, e)
		var ans struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(out, &ans); err != nil || ans.JSONRPC != "2.0" || len(ans.ID) == 0 {
			t.Fatalf("%q: the answer %s", data, out)
		}
	})
}
