package evolve_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/moora-go/moora/modelgen/internal/evolve"
	"github.com/moora-go/moora/modelgen/internal/spec"
	"github.com/moora-go/moora/modelgen/internal/spectest"
)

// head starts every spec of the tests.
const head = "version: 1\nactors: [user, llm]\n"

// load parses and decodes a spec of the tests, and checks that it is valid
// (Compare is defined on valid specs only).
func load(t *testing.T, file, body string) *spec.Spec {
	t.Helper()
	data := []byte(head + body)
	spectest.Build(t, file, string(data)) // fails the test on an invalid spec
	root, err := spec.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Decode(root)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		// want's Old and New are compared only for a change that has
		// either.
		want []evolve.Change
	}{
		{
			name: "description and default only",
			old: `
inputs:
  user:
    send:
      type: object
      description: Sends a message.
      properties: {text: {type: string, description: The text.}, n: {type: integer, default: 1}}
      required: [text]
observations:
  user: {user: {draft: {type: string, description: What is typed.}}}
`,
			new: `
inputs:
  user:
    send:
      type: object
      description: Sends a message to the model.
      properties: {text: {type: string}, n: {type: integer, default: 2, description: How many.}}
      required: [text]
observations:
  user: {user: {draft: {type: string}}}
`,
		},
		{
			// The journal's schema is the same: readOnly changes only what
			// a client may leave out.
			name: "readOnly added and removed",
			old: `
inputs:
  user:
    send:
      type: object
      properties: {text: {type: string}, at: {type: integer}, by: {type: string, readOnly: true}}
      required: [text, at, by]
`,
			new: `
inputs:
  user:
    send:
      type: object
      properties: {text: {type: string}, at: {type: integer, readOnly: true}, by: {type: string}}
      required: [text, at, by]
`,
		},
		{
			name: "$defs rename with equal shapes",
			old: `
$defs:
  Msg: {type: object, properties: {id: {type: string}}, required: [id]}
observations:
  user: {user: {messages: {type: array, items: {$ref: "#/$defs/Msg"}}}}
inputs:
  user:
    send: {type: object, properties: {message: {$ref: "#/$defs/Msg"}}, required: [message]}
`,
			new: `
$defs:
  Message: {type: object, properties: {id: {type: string}}, required: [id]}
observations:
  user: {user: {messages: {type: array, items: {$ref: "#/$defs/Message"}}}}
inputs:
  user:
    send: {type: object, properties: {message: {$ref: "#/$defs/Message"}}, required: [message]}
`,
		},
		{
			name: "recursive type unchanged",
			old: `
$defs:
  Tree: {type: object, properties: {name: {type: string}, children: {type: array, items: {$ref: "#/$defs/Tree"}}, parent: {$ref: "#/$defs/Tree"}}, required: [name]}
observations:
  user: {user: {forest: {type: array, items: {$ref: "#/$defs/Tree"}}}}
inputs:
  user:
    plant: {type: object, properties: {tree: {$ref: "#/$defs/Tree"}}, required: [tree]}
`,
			new: `
$defs:
  Node: {type: object, properties: {name: {type: string}, children: {type: array, items: {$ref: "#/$defs/Node"}}, parent: {$ref: "#/$defs/Node"}}, required: [name]}
observations:
  user: {user: {forest: {type: array, items: {$ref: "#/$defs/Node"}}}}
inputs:
  user:
    plant: {type: object, properties: {tree: {$ref: "#/$defs/Node"}}, required: [tree]}
`,
		},
		{
			name: "recursive type gains a property",
			old: `
$defs:
  Tree: {type: object, properties: {name: {type: string}, children: {type: array, items: {$ref: "#/$defs/Tree"}}}, required: [name]}
observations:
  user: {user: {forest: {type: array, items: {$ref: "#/$defs/Tree"}}}}
inputs:
  user:
    plant: {type: object, properties: {tree: {$ref: "#/$defs/Tree"}}, required: [tree]}
`,
			new: `
$defs:
  Tree: {type: object, properties: {name: {type: string}, label: {type: string}, children: {type: array, items: {$ref: "#/$defs/Tree"}}}, required: [name]}
observations:
  user: {user: {forest: {type: array, items: {$ref: "#/$defs/Tree"}}}}
inputs:
  user:
    plant: {type: object, properties: {tree: {$ref: "#/$defs/Tree"}}, required: [tree]}
`,
			want: []evolve.Change{
				{Breaking: false, Input: "plant", Path: "/tree/label", What: "new optional property", Ptr: "/$defs/Tree/properties/label"},
				{Breaking: false, Input: "", Path: "/forest/[]/label", What: "new optional property", Ptr: "/$defs/Tree/properties/label", Decodes: true},
			},
		},
		{
			// A $defs type used twice in an input is reported once, where
			// the input first uses it.
			name: "new required property of a $defs type in inputs and state",
			old: `
$defs:
  Msg: {type: object, properties: {id: {type: string}, text: {type: string}}, required: [id, text]}
observations:
  user:
    user: {messages: {type: array, items: {$ref: "#/$defs/Msg"}}}
inputs:
  user:
    send: {type: object, properties: {message: {$ref: "#/$defs/Msg"}}, required: [message]}
    edit: {type: object, properties: {message: {$ref: "#/$defs/Msg"}, previous: {$ref: "#/$defs/Msg"}}, required: [message]}
    reset: {type: object}
`,
			new: `
$defs:
  Msg: {type: object, properties: {id: {type: string}, text: {type: string}, priority: {type: integer}}, required: [id, text, priority]}
observations:
  user:
    user: {messages: {type: array, items: {$ref: "#/$defs/Msg"}}}
inputs:
  user:
    send: {type: object, properties: {message: {$ref: "#/$defs/Msg"}}, required: [message]}
    edit: {type: object, properties: {message: {$ref: "#/$defs/Msg"}, previous: {$ref: "#/$defs/Msg"}}, required: [message]}
    reset: {type: object}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "edit", Path: "/message/priority", What: "new required property", New: `{"type":"integer"}`, Ptr: "/$defs/Msg/properties/priority"},
				{Breaking: true, Input: "send", Path: "/message/priority", What: "new required property", New: `{"type":"integer"}`, Ptr: "/$defs/Msg/properties/priority"},
				{Breaking: true, Input: "", Path: "/messages/[]/priority", What: "new required property", New: `{"type":"integer"}`, Ptr: "/$defs/Msg/properties/priority"},
			},
		},
		{
			name: "new optional property and removed property of a $defs type",
			old: `
$defs:
  Msg: {type: object, properties: {id: {type: string}, text: {type: string}}, required: [id]}
observations:
  user:
    user: {messages: {type: array, items: {$ref: "#/$defs/Msg"}}}
inputs:
  user:
    send: {type: object, properties: {message: {$ref: "#/$defs/Msg"}}, required: [message]}
`,
			new: `
$defs:
  Msg: {type: object, properties: {id: {type: string}, note: {type: string}}, required: [id]}
observations:
  user:
    user: {messages: {type: array, items: {$ref: "#/$defs/Msg"}}}
inputs:
  user:
    send: {type: object, properties: {message: {$ref: "#/$defs/Msg"}}, required: [message]}
`,
			want: []evolve.Change{
				{Breaking: false, Input: "send", Path: "/message/note", What: "new optional property", Ptr: "/$defs/Msg/properties/note"},
				{Breaking: true, Input: "send", Path: "/message/text", What: "removed property", Ptr: "/$defs/Msg/properties"},
				{Breaking: false, Input: "", Path: "/messages/[]/note", What: "new optional property", Ptr: "/$defs/Msg/properties/note", Decodes: true},
				{Breaking: true, Input: "", Path: "/messages/[]/text", What: "removed property", Ptr: "/$defs/Msg/properties"},
			},
		},
		{
			name: "removed optional property of an input",
			old: `
inputs:
  user:
    send: {type: object, properties: {text: {type: string}, draft: {type: boolean}}, required: [text]}
`,
			new: `
inputs:
  user:
    send: {type: object, properties: {text: {type: string}}, required: [text]}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "send", Path: "/draft", What: "removed property", Old: `{"type":"boolean"}`, Ptr: "/inputs/user/send/properties"},
			},
		},
		{
			name: "renamed state property",
			old: `
observations:
  user: {llm: {acks: {type: integer}}}
  llm: {llm: {acks: {type: integer}}}
`,
			new: `
observations:
  user: {llm: {acknowledgements: {type: integer}}}
  llm: {llm: {acknowledgements: {type: integer}}}
`,
			want: []evolve.Change{
				{Breaking: false, Input: "", Path: "/acknowledgements", What: "new state property", Old: "", New: `{"type":"integer"}`, Ptr: "/observations/llm/llm/acknowledgements"},
				{Breaking: true, Input: "", Path: "/acks", What: "removed state property", Old: `{"type":"integer"}`, New: "", Ptr: "/observations"},
			},
		},
		{
			name: "no state left",
			old: `
observations:
  user: {llm: {acks: {type: integer}}}
`,
			new: `
inputs:
  user: {ack: {type: object}}
`,
			want: []evolve.Change{
				{Breaking: false, Input: "ack", Path: "", What: "new input type", Ptr: "/inputs/user/ack"},
				{Breaking: true, Input: "", Path: "/acks", What: "removed state property", Ptr: ""},
			},
		},
		{
			name: "removed input type, the actor keeping inputs",
			old: `
$defs:
  Id: {type: object, properties: {id: {type: string}}, required: [id]}
inputs:
  user:
    send: {type: object}
    cancel: {$ref: "#/$defs/Id"}
`,
			new: `
$defs:
  Id: {type: object, properties: {id: {type: string}}, required: [id]}
inputs:
  user:
    send: {type: object}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "cancel", Path: "", What: "removed input type", Old: `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`, Ptr: "/inputs/user"},
			},
		},
		{
			name: "removed input type, the actor left without inputs",
			old: `
inputs:
  user: {send: {type: object}}
  llm: {reply: {type: object}}
`,
			new: `
inputs:
  user: {send: {type: object}}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "reply", Path: "", What: "removed input type", Ptr: "/inputs"},
			},
		},
		{
			name: "removed input type, no inputs left",
			old: `
inputs:
  user: {send: {type: object}}
`,
			new: `
observations:
  user: {user: {sent: {type: integer}}}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "send", Path: "", What: "removed input type", Ptr: ""},
				{Breaking: false, Input: "", Path: "/sent", What: "new state property", Ptr: "/observations/user/user/sent"},
			},
		},
		{
			name: "new input type",
			old: `
inputs:
  user: {send: {type: object}}
`,
			new: `
inputs:
  user: {send: {type: object}}
  llm: {reply: {type: object, properties: {text: {type: string}}, required: [text]}}
`,
			want: []evolve.Change{
				{Breaking: false, Input: "reply", Path: "", What: "new input type", New: `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, Ptr: "/inputs/llm/reply"},
			},
		},
		{
			name: "input moved to another actor",
			old: `
inputs:
  user: {send: {type: object, properties: {text: {type: string}}}}
`,
			new: `
inputs:
  llm: {send: {type: object, properties: {text: {type: string}}}}
`,
			want: []evolve.Change{
				{Breaking: false, Input: "send", Path: "", What: "input moved from actor user to llm", Ptr: "/inputs/llm/send"},
			},
		},
		{
			name: "required and optional",
			old: `
inputs:
  user:
    send: {type: object, properties: {a: {type: string}, b: {type: string}}, required: [a]}
observations:
  user:
    user: {draft: {type: object, properties: {a: {type: string}, b: {type: string}}, required: [a]}}
`,
			new: `
inputs:
  user:
    send: {type: object, properties: {a: {type: string}, b: {type: string}}, required: [b]}
observations:
  user:
    user: {draft: {type: object, properties: {a: {type: string}, b: {type: string}}, required: [b]}}
`,
			want: []evolve.Change{
				{Breaking: false, Input: "send", Path: "/a", What: "property no longer required", Ptr: "/inputs/user/send/properties/a"},
				{Breaking: true, Input: "send", Path: "/b", What: "property now required", Ptr: "/inputs/user/send/properties/b"},
				{Breaking: false, Input: "", Path: "/draft/a", What: "property no longer required", Ptr: "/observations/user/user/draft/properties/a"},
				{Breaking: true, Input: "", Path: "/draft/b", What: "property now required", Ptr: "/observations/user/user/draft/properties/b"},
			},
		},
		{
			// additionalProperties: false is validation, not enforced on the
			// state.
			name: "additionalProperties false added and removed",
			old: `
inputs:
  user:
    send: {type: object, properties: {text: {type: string}}}
    stop: {type: object, additionalProperties: false}
observations:
  user: {user: {draft: {type: object, properties: {text: {type: string}}}}}
`,
			new: `
inputs:
  user:
    send: {type: object, properties: {text: {type: string}}, additionalProperties: false}
    stop: {type: object}
observations:
  user: {user: {draft: {type: object, properties: {text: {type: string}}, additionalProperties: false}}}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "send", Path: "", What: "additionalProperties false added", Ptr: "/inputs/user/send"},
				{Breaking: false, Input: "stop", Path: "", What: "additionalProperties false removed", Ptr: "/inputs/user/stop"},
			},
		},
		{
			name: "map values and array items",
			old: `
inputs:
  user:
    send:
      type: object
      properties:
        counts: {type: object, additionalProperties: {type: integer}}
        tags: {type: array, items: {type: string}}
observations:
  llm: {llm: {usage: {type: object, additionalProperties: {type: object, properties: {cost: {type: number}}}}}}
`,
			new: `
inputs:
  user:
    send:
      type: object
      properties:
        counts: {type: object, additionalProperties: {type: number}}
        tags: {type: array, items: {type: integer}}
observations:
  llm: {llm: {usage: {type: object, additionalProperties: {type: object, properties: {cost: {type: string}}}}}}
`,
			want: []evolve.Change{
				{Breaking: false, Input: "send", Path: "/counts/{}", What: "type widened: integer -> number", Ptr: "/inputs/user/send/properties/counts/additionalProperties"},
				{Breaking: true, Input: "send", Path: "/tags/[]", What: "type changed", Old: `{"type":"string"}`, New: `{"type":"integer"}`, Ptr: "/inputs/user/send/properties/tags/items"},
				{Breaking: true, Input: "", Path: "/usage/{}/cost", What: "type changed", Old: `{"type":"number"}`, New: `{"type":"string"}`, Ptr: "/observations/llm/llm/usage/additionalProperties/properties/cost"},
			},
		},
		{
			name: "types",
			old: `
inputs:
  user:
    send:
      type: object
      properties:
        a: {type: string}
        b: {type: number}
        c: {type: integer}
        d: {type: object, additionalProperties: {type: string}}
        e: {type: array, items: {type: string}}
`,
			new: `
inputs:
  user:
    send:
      type: object
      properties:
        a: {type: boolean}
        b: {type: integer}
        c: {type: number}
        d: {type: object, properties: {x: {type: string}}}
        e: {type: [array, "null"], items: {type: string}}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "send", Path: "/a", What: "type changed", Old: `{"type":"string"}`, New: `{"type":"boolean"}`, Ptr: "/inputs/user/send/properties/a"},
				{Breaking: true, Input: "send", Path: "/b", What: "type changed", Old: `{"type":"number"}`, New: `{"type":"integer"}`, Ptr: "/inputs/user/send/properties/b"},
				{Breaking: false, Input: "send", Path: "/c", What: "type widened: integer -> number", Old: `{"type":"integer"}`, New: `{"type":"number"}`, Ptr: "/inputs/user/send/properties/c"},
				{Breaking: true, Input: "send", Path: "/d", What: "type changed", Old: `{"type":"object","additionalProperties":{"type":"string"}}`, New: `{"type":"object","properties":{"x":{"type":"string"}}}`, Ptr: "/inputs/user/send/properties/d"},
				{Breaking: false, Input: "send", Path: "/e", What: "nullable now", Old: `{"type":"array","items":{"type":"string"}}`, New: `{"type":["array","null"],"items":{"type":"string"}}`, Ptr: "/inputs/user/send/properties/e"},
			},
		},
		{
			name: "nullable",
			old: `
inputs:
  user:
    send: {type: object, properties: {a: {type: string}, b: {type: [integer, "null"]}}}
observations:
  user: {user: {c: {type: [string, "null"]}, d: {type: boolean}}}
`,
			new: `
inputs:
  user:
    send: {type: object, properties: {a: {type: [string, "null"]}, b: {type: integer}}}
observations:
  user: {user: {c: {type: string}, d: {type: ["null", boolean]}}}
`,
			want: []evolve.Change{
				{Breaking: false, Input: "send", Path: "/a", What: "nullable now", Ptr: "/inputs/user/send/properties/a"},
				{Breaking: true, Input: "send", Path: "/b", What: "no longer nullable", Ptr: "/inputs/user/send/properties/b"},
				{Breaking: true, Input: "", Path: "/c", What: "no longer nullable", Ptr: "/observations/user/user/c"},
				{Breaking: false, Input: "", Path: "/d", What: "nullable now", Ptr: "/observations/user/user/d"},
			},
		},
		{
			name: "enum values removed and added",
			old: `
$defs:
  Status: {type: string, enum: [todo, doing, done]}
inputs:
  user:
    set-status: {type: object, properties: {status: {$ref: "#/$defs/Status"}}, required: [status]}
observations:
  user: {user: {status: {$ref: "#/$defs/Status"}}}
`,
			new: `
$defs:
  Status: {type: string, enum: [todo, done, blocked]}
inputs:
  user:
    set-status: {type: object, properties: {status: {$ref: "#/$defs/Status"}}, required: [status]}
observations:
  user: {user: {status: {$ref: "#/$defs/Status"}}}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "set-status", Path: "/status", What: "enum value removed: doing", Old: `{"type":"string","enum":["todo","doing","done"]}`, New: `{"type":"string","enum":["todo","done","blocked"]}`, Ptr: "/$defs/Status"},
				{Breaking: false, Input: "set-status", Path: "/status", What: "enum value added: blocked", Old: `{"type":"string","enum":["todo","doing","done"]}`, New: `{"type":"string","enum":["todo","done","blocked"]}`, Ptr: "/$defs/Status"},
				{Breaking: true, Input: "", Path: "/status", What: "enum value removed: doing", Old: `{"type":"string","enum":["todo","doing","done"]}`, New: `{"type":"string","enum":["todo","done","blocked"]}`, Ptr: "/$defs/Status"},
				{Breaking: false, Input: "", Path: "/status", What: "enum value added: blocked", Old: `{"type":"string","enum":["todo","doing","done"]}`, New: `{"type":"string","enum":["todo","done","blocked"]}`, Ptr: "/$defs/Status", Decodes: true},
			},
		},
		{
			name: "enum added and removed, const changed",
			old: `
inputs:
  user:
    send:
      type: object
      properties: {a: {type: string}, b: {enum: [x, y]}, v: {const: v1}}
      required: [v]
`,
			new: `
inputs:
  user:
    send:
      type: object
      properties: {a: {type: string, enum: [x, y]}, b: {type: string}, v: {const: v2}}
      required: [v]
`,
			want: []evolve.Change{
				{Breaking: true, Input: "send", Path: "/a", What: "enum added", Ptr: "/inputs/user/send/properties/a"},
				{Breaking: false, Input: "send", Path: "/b", What: "enum removed", Ptr: "/inputs/user/send/properties/b"},
				{Breaking: true, Input: "send", Path: "/v", What: "const changed", Old: `{"const":"v1"}`, New: `{"const":"v2"}`, Ptr: "/inputs/user/send/properties/v"},
			},
		},
		{
			name: "constraints",
			old: `
inputs:
  user:
    send:
      type: object
      properties:
        code: {type: string, pattern: "^[a-z]+$"}
        count: {type: integer, minimum: 0, maximum: 10}
        limits: {type: object, additionalProperties: {type: integer}}
        name: {type: string, maxLength: 10}
        ratio: {type: number, exclusiveMinimum: 1, exclusiveMaximum: 2}
        step: {type: number, multipleOf: 0.5}
        tags: {type: array, items: {type: string}, maxItems: 3}
        when: {type: string}
        size: {type: integer, multipleOf: 2}
`,
			new: `
inputs:
  user:
    send:
      type: object
      properties:
        code: {type: string, pattern: "^[a-z0-9]+$"}
        count: {type: integer, maximum: 20}
        limits: {type: object, additionalProperties: {type: integer}, maxProperties: 5}
        name: {type: string, minLength: 1, maxLength: 5}
        ratio: {type: number, exclusiveMinimum: 1.0, exclusiveMaximum: 2.0}
        step: {type: number, multipleOf: 0.25}
        tags: {type: array, items: {type: string}, uniqueItems: true}
        when: {type: string, format: date-time}
        size: {type: integer}
observations:
  user: {user: {count: {type: integer, maximum: 10}}}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "send", Path: "/code", What: `constraint changed: pattern "^[a-z]+$" -> "^[a-z0-9]+$"`, Ptr: "/inputs/user/send/properties/code"},
				{Breaking: false, Input: "send", Path: "/count", What: "constraint widened: minimum removed", Old: `{"type":"integer","minimum":0,"maximum":10}`, New: `{"type":"integer","maximum":20}`, Ptr: "/inputs/user/send/properties/count"},
				{Breaking: false, Input: "send", Path: "/count", What: "constraint widened: maximum 10 -> 20", Old: `{"type":"integer","minimum":0,"maximum":10}`, New: `{"type":"integer","maximum":20}`, Ptr: "/inputs/user/send/properties/count"},
				{Breaking: true, Input: "send", Path: "/limits", What: "constraint narrowed: maxProperties 5 added", Ptr: "/inputs/user/send/properties/limits"},
				{Breaking: true, Input: "send", Path: "/name", What: "constraint narrowed: minLength 1 added", Ptr: "/inputs/user/send/properties/name"},
				{Breaking: true, Input: "send", Path: "/name", What: "constraint narrowed: maxLength 10 -> 5", Ptr: "/inputs/user/send/properties/name"},
				{Breaking: false, Input: "send", Path: "/size", What: "constraint widened: multipleOf removed", Ptr: "/inputs/user/send/properties/size"},
				{Breaking: true, Input: "send", Path: "/step", What: "constraint changed: multipleOf 0.5 -> 0.25", Ptr: "/inputs/user/send/properties/step"},
				{Breaking: false, Input: "send", Path: "/tags", What: "constraint widened: maxItems removed", Ptr: "/inputs/user/send/properties/tags"},
				{Breaking: true, Input: "send", Path: "/tags", What: "constraint narrowed: uniqueItems added", Ptr: "/inputs/user/send/properties/tags"},
				{Breaking: true, Input: "send", Path: "/when", What: `constraint narrowed: format "date-time" added`, Ptr: "/inputs/user/send/properties/when"},
				{Breaking: false, Input: "", Path: "/count", What: "new state property", Ptr: "/observations/user/user/count"},
			},
		},
		{
			name: "const added and removed, bounds moved",
			old: `
inputs:
  user:
    send:
      type: object
      properties:
        a: {const: v1}
        b: {type: string}
        c: {type: number, minimum: 1, exclusiveMaximum: 10}
        d: {type: number, exclusiveMinimum: 1, maximum: 10}
      required: [a, b]
`,
			new: `
inputs:
  user:
    send:
      type: object
      properties:
        a: {type: string}
        b: {const: v1}
        c: {type: number, minimum: 2, exclusiveMaximum: 9.5}
        d: {type: number, exclusiveMinimum: 0.5, maximum: 100}
      required: [a, b]
`,
			want: []evolve.Change{
				{Breaking: false, Input: "send", Path: "/a", What: "const removed", Ptr: "/inputs/user/send/properties/a"},
				{Breaking: true, Input: "send", Path: "/b", What: "const added", Ptr: "/inputs/user/send/properties/b"},
				{Breaking: true, Input: "send", Path: "/c", What: "constraint narrowed: minimum 1 -> 2", Ptr: "/inputs/user/send/properties/c"},
				{Breaking: true, Input: "send", Path: "/c", What: "constraint narrowed: exclusiveMaximum 10 -> 9.5", Ptr: "/inputs/user/send/properties/c"},
				{Breaking: false, Input: "send", Path: "/d", What: "constraint widened: maximum 10 -> 100", Ptr: "/inputs/user/send/properties/d"},
				{Breaking: false, Input: "send", Path: "/d", What: "constraint widened: exclusiveMinimum 1 -> 0.5", Ptr: "/inputs/user/send/properties/d"},
			},
		},
		{
			name: "constraints of the state are not changes",
			old: `
observations:
  user:
    user:
      count: {type: integer, maximum: 10}
      name: {type: string}
      tags: {type: array, items: {type: string, format: email}, uniqueItems: true}
`,
			new: `
observations:
  user:
    user:
      count: {type: integer, maximum: 5, minimum: 1}
      name: {type: string, minLength: 1, pattern: "^a"}
      tags: {type: array, items: {type: string, format: uuid}, maxItems: 3}
`,
		},
		{
			name: "allOf split with the same shape",
			old: `
inputs:
  user:
    send: {type: object, properties: {id: {type: string}, text: {type: string}}, required: [id, text]}
`,
			new: `
$defs:
  Base: {type: object, properties: {id: {type: string}}, required: [id]}
inputs:
  user:
    send: {type: object, allOf: [{$ref: "#/$defs/Base"}], properties: {text: {type: string}}, required: [text]}
`,
		},
		{
			name: "allOf members changed",
			old: `
$defs:
  Base: {type: object, properties: {id: {type: string}}, required: [id]}
inputs:
  user:
    send:
      type: object
      allOf:
        - {$ref: "#/$defs/Base"}
        - {type: object, properties: {tag: {type: string}, note: {type: string}}}
      properties: {text: {type: string}}
`,
			new: `
$defs:
  Base: {type: object, properties: {id: {type: string}, at: {type: integer}}, required: [id, at]}
inputs:
  user:
    send:
      type: object
      allOf:
        - {$ref: "#/$defs/Base"}
        - {type: object, properties: {tag: {type: string, maxLength: 5}}}
      properties: {text: {type: string}}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "send", Path: "/at", What: "new required property", Ptr: "/$defs/Base/properties/at"},
				{Breaking: true, Input: "send", Path: "/note", What: "removed property", Ptr: "/inputs/user/send/properties"},
				{Breaking: true, Input: "send", Path: "/tag", What: "constraint narrowed: maxLength 5 added", Ptr: "/inputs/user/send/allOf/1/properties/tag"},
			},
		},
		{
			name: "oneOf variants added, removed and changed",
			old: `
$defs:
  Shape:
    oneOf:
      - {type: object, properties: {kind: {const: circle}, radius: {type: number}}, required: [kind, radius]}
      - {type: object, properties: {kind: {const: square}, side: {type: number}}, required: [kind, side]}
inputs:
  user:
    draw: {type: object, properties: {shape: {$ref: "#/$defs/Shape"}}, required: [shape]}
observations:
  user: {user: {shapes: {type: array, items: {$ref: "#/$defs/Shape"}}}}
`,
			new: `
$defs:
  Shape:
    oneOf:
      - {type: object, properties: {kind: {const: circle}, radius: {type: number}, unit: {type: string}}, required: [kind, radius, unit]}
      - {$ref: "#/$defs/Triangle"}
  Triangle: {type: object, properties: {kind: {const: triangle}, base: {type: number}}, required: [kind, base]}
inputs:
  user:
    draw: {type: object, properties: {shape: {$ref: "#/$defs/Shape"}}, required: [shape]}
observations:
  user: {user: {shapes: {type: array, items: {$ref: "#/$defs/Shape"}}}}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "draw", Path: "/shape", What: "oneOf variant removed: square", Old: `{"type":"object","properties":{"kind":{"const":"square"},"side":{"type":"number"}},"required":["kind","side"]}`, Ptr: "/$defs/Shape"},
				{Breaking: false, Input: "draw", Path: "/shape", What: "oneOf variant added: triangle", New: `{"type":"object","properties":{"kind":{"const":"triangle"},"base":{"type":"number"}},"required":["kind","base"]}`, Ptr: "/$defs/Triangle"},
				{Breaking: true, Input: "draw", Path: "/shape/kind=circle/unit", What: "new required property", New: `{"type":"string"}`, Ptr: "/$defs/Shape/oneOf/0/properties/unit"},
				{Breaking: true, Input: "", Path: "/shapes/[]", What: "oneOf variant removed: square", Old: `{"type":"object","properties":{"kind":{"const":"square"},"side":{"type":"number"}},"required":["kind","side"]}`, Ptr: "/$defs/Shape"},
				{Breaking: false, Input: "", Path: "/shapes/[]", What: "oneOf variant added: triangle", New: `{"type":"object","properties":{"kind":{"const":"triangle"},"base":{"type":"number"}},"required":["kind","base"]}`, Ptr: "/$defs/Triangle"},
				{Breaking: true, Input: "", Path: "/shapes/[]/kind=circle/unit", What: "new required property", New: `{"type":"string"}`, Ptr: "/$defs/Shape/oneOf/0/properties/unit"},
			},
		},
		{
			name: "oneOf discriminator changed",
			old: `
inputs:
  user:
    draw:
      type: object
      properties:
        shape:
          oneOf:
            - {type: object, properties: {kind: {const: circle}}, required: [kind]}
            - {type: object, properties: {kind: {const: square}}, required: [kind]}
`,
			new: `
inputs:
  user:
    draw:
      type: object
      properties:
        shape:
          oneOf:
            - {type: object, properties: {tag: {const: circle}}, required: [tag]}
            - {type: object, properties: {tag: {const: square}}, required: [tag]}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "draw", Path: "/shape", What: "oneOf discriminator changed: kind -> tag", Ptr: "/inputs/user/draw/properties/shape"},
			},
		},
		{
			name: "kind of value changed",
			old: `
inputs:
  user:
    draw:
      type: object
      properties:
        shape:
          oneOf:
            - {type: object, properties: {kind: {const: circle}}, required: [kind]}
`,
			new: `
inputs:
  user:
    draw:
      type: object
      properties:
        shape: {type: object, properties: {kind: {const: circle}}, required: [kind]}
`,
			want: []evolve.Change{
				{Breaking: true, Input: "draw", Path: "/shape", What: "type changed", Ptr: "/inputs/user/draw/properties/shape"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := load(t, "old.yaml", tc.old)
			new := load(t, "new.yaml", tc.new)
			got := evolve.Compare(old, new)
			for i := range min(len(got), len(tc.want)) {
				if tc.want[i].Old == "" && tc.want[i].New == "" {
					got[i].Old, got[i].New = "", ""
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %d changes, want %d", len(got), len(tc.want))
			}
			for i := range max(len(got), len(tc.want)) {
				switch {
				case i >= len(got):
					t.Errorf("missing %+v", tc.want[i])
				case i >= len(tc.want):
					t.Errorf("extra %+v", got[i])
				case got[i] != tc.want[i]:
					t.Errorf("change %d:\n got  %+v\n want %+v", i, got[i], tc.want[i])
				}
			}
			breaking := false
			for _, c := range tc.want {
				breaking = breaking || c.Breaking
			}
			if b := evolve.Breaking(got); b != breaking {
				t.Errorf("Breaking = %v, want %v", b, breaking)
			}
		})
	}
}

// TestCompareSelf compares the sample spec, which uses every part of the
// format, with itself: no changes.
func TestCompareSelf(t *testing.T) {
	s := load(t, "agent.yaml", strings.TrimPrefix(sample, head))
	if cs := evolve.Compare(s, s); len(cs) != 0 {
		t.Errorf("changes of a spec with itself: %+v", cs)
	}
}

// sample uses $defs, allOf, oneOf, maps, nullables and recursion.
const sample = head + `
$defs:
  Role: {type: string, enum: [user, assistant, tool]}
  Message:
    type: object
    properties:
      id: {type: string, format: uuid}
      role: {$ref: "#/$defs/Role"}
      replies: {type: array, items: {$ref: "#/$defs/Message"}}
      replyTo: {type: [string, "null"]}
    required: [id, role]
  ToolCall:
    oneOf:
      - {type: object, properties: {tool: {const: search}, query: {type: string}}, required: [tool, query]}
      - {$ref: "#/$defs/Calculate"}
  Calculate:
    allOf:
      - {type: object, properties: {tool: {const: calculate}}, required: [tool]}
    properties: {expression: {type: string}}
    required: [expression]
observations:
  user: {user: {messages: {type: array, items: {$ref: "#/$defs/Message"}}}}
  llm: {llm: {calls: {type: object, additionalProperties: {$ref: "#/$defs/ToolCall"}}}}
inputs:
  user:
    send: {type: object, properties: {message: {$ref: "#/$defs/Message"}}, required: [message]}
  llm:
    call: {type: object, properties: {call: {$ref: "#/$defs/ToolCall"}}, required: [call]}
`

// TestShownCut checks that Old and New are cut to 200 bytes, at a
// character boundary, and marked.
func TestShownCut(t *testing.T) {
	values := strings.Repeat("é", 30) + ", " + strings.Repeat("b", 200)
	old := load(t, "old.yaml", "inputs: {user: {send: {type: object}}}\n")
	new := load(t, "new.yaml", "inputs: {user: {send: {type: object, properties: {v: {enum: [x, "+values+"]}}}}}\n")
	cs := evolve.Compare(old, new)
	if len(cs) != 1 {
		t.Fatalf("got %+v, want one change", cs)
	}
	shown := cs[0].New
	if !strings.HasSuffix(shown, "…") || !utf8.ValidString(shown) {
		t.Fatalf("New = %q, want valid UTF-8 ending in …", shown)
	}
	if n := len(strings.TrimSuffix(shown, "…")); n > 200 || n < 199 {
		t.Errorf("New is cut to %d bytes, want 200 (199 at a character boundary)", n)
	}
	if !strings.HasPrefix(shown, `{"enum":["x","éé`) {
		t.Errorf("New = %q", shown)
	}
}
