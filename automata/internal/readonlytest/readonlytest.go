// Package readonlytest is the runtime's chat test agent (automata/internal/chattest)
// as if its spec marked the timestamp of send-user-message readOnly, for the
// tests of the packages that take inputs from clients (httpbridge,
// devpanel): its input schema document with "readOnly": true there, and the
// decoder of what clients send that a generated DecodeClientInput makes of
// it. The agent itself, its admission step and its journal are the chat test
// agent's, unchanged: readOnly changes what a client may leave out, not the
// inputs the journal holds.
package readonlytest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/moora-go/moora/automata/inputjson"
	"github.com/moora-go/moora/automata/internal/chattest/decl"
)

// inputSchema is decl.InputSchema() with "readOnly": true on the timestamp
// of send-user-message, its properties in the order of the spec, as
// agentgen would generate it.
var inputSchema = func() string {
	doc := string(decl.InputSchema())
	in := strings.Index(doc, `"send-user-message": {`)
	prop := strings.Index(doc[max(in, 0):], `"timestamp": {`)
	if in < 0 || prop < 0 {
		panic("readonlytest: no timestamp property of send-user-message in decl.InputSchema()")
	}
	at := in + prop + len(`"timestamp": {`)
	doc = doc[:at] + `"readOnly": true, ` + doc[at:]
	if !json.Valid([]byte(doc)) {
		panic(fmt.Sprintf("readonlytest: marking the timestamp readOnly made invalid JSON:\n%s", doc))
	}
	return doc
}()

// InputSchema returns the input schema document of the agent, with the
// timestamp of send-user-message readOnly.
func InputSchema() []byte { return []byte(inputSchema) }

var clients = inputjson.NewDecoder(inputSchema, map[string]func([]byte) (decl.AgentInput, error){
	"send-user-message": unmarshal[decl.SendUserMessage],
	"send-assi-message": unmarshal[decl.SendAssiMessage],
}).ForClients()

func unmarshal[T decl.AgentInput](data []byte) (decl.AgentInput, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeClientInput decodes an input as a client sends it: the timestamp of
// send-user-message may be absent, and what a client sends for it is
// dropped, for the admission step to stamp.
func DecodeClientInput(data []byte) (decl.AgentInput, error) { return clients.Decode(data) }
