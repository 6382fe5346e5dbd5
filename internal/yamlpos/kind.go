package yamlpos

// Kind is the kind of a value read from YAML: one of JSON's, as both
// readers' trees hold them.
type Kind uint8

const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"null", "boolean", "number", "string", "array", "object"}

// String is the kind's name in JSON Schema's words: "null", "boolean",
// "number", "string", "array", "object".
func (k Kind) String() string { return kindNames[k] }
