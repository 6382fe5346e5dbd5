package yamlpos

import "github.com/goccy/go-yaml/token"

// Limits bound what CheckTokens lets through to the parser. Each caller
// says its own; a zero field takes its default.
type Limits struct {
	// Depth is how many collections, flow or block, may be open around
	// a collection. Default: DefaultDepth.
	Depth int
	// Values bounds the values, counted from below: the document, each
	// ":", each "-", each "," in a flow sequence. Default: DefaultValues.
	Values int
	// BlockEntries is how many entries a block mapping may have: the
	// parser's time and memory grow with their square (100,000 took 17 s
	// and 390 MB; 1,000 take 7 ms). Default: DefaultBlockEntries.
	BlockEntries int
	// CommaIsValue counts each "," as a value, in a flow mapping too.
	CommaIsValue bool
}

// The default Limits.
const (
	DefaultDepth        = 100
	DefaultValues       = 50_000
	DefaultBlockEntries = 1000
)

func (l Limits) depth() int        { return cmpOr(l.Depth, DefaultDepth) }
func (l Limits) values() int       { return cmpOr(l.Values, DefaultValues) }
func (l Limits) blockEntries() int { return cmpOr(l.BlockEntries, DefaultBlockEntries) }

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Limit names the limit a document crosses.
type Limit uint8

const (
	// TooDeep: collections nested deeper than Limits.Depth.
	TooDeep Limit = iota + 1
	// TooManyValues: more values than Limits.Values.
	TooManyValues
	// TooManyEntries: a block mapping of more than Limits.BlockEntries.
	TooManyEntries
)

// A block is a block mapping or sequence that is open at a token: where
// its keys or its "-" are, and how many entries it has so far.
type block struct {
	col     int
	seq     bool
	entries int
}

// CheckTokens checks the lexer tokens of a YAML document against l,
// before the parser sees them, in time linear in the tokens. It returns
// the token that first crosses a limit and which limit, or nil. A
// document within the limits may still have more values or be nested
// deeper than they say: the reader of its syntax tree counts exactly.
//
// A block collection is open from its first key or "-" until a key or "-"
// at a smaller column, or a key at the column of the "-"s of a sequence
// (a sequence may be written at the column of the key that holds it). Its
// level is the number of collections open around it; a flow collection's
// is that of the block and flow collections around it.
func CheckTokens(tokens token.Tokens, l Limits) (*token.Token, Limit) {
	maxDepth, maxValues, maxEntries := l.depth(), l.values(), l.blockEntries()
	var blocks []block
	var flow []token.Type // the open flow collections: SequenceStartType or MappingStartType
	values := 1           // the document
	// open records a block entry that starts at tk: a key (seq false) or
	// a "-".
	open := func(tk *token.Token, seq bool) Limit {
		col := tk.Position.Column
		for len(blocks) > 0 {
			top := blocks[len(blocks)-1]
			if top.col < col || (top.col == col && (top.seq == seq || seq)) {
				break
			}
			blocks = blocks[:len(blocks)-1]
		}
		if n := len(blocks); n > 0 && blocks[n-1].col == col && blocks[n-1].seq == seq {
			blocks[n-1].entries++
			if !seq && blocks[n-1].entries > maxEntries {
				return TooManyEntries
			}
			return 0
		}
		if len(blocks) > maxDepth {
			return TooDeep
		}
		blocks = append(blocks, block{col: col, seq: seq, entries: 1})
		return 0
	}
	for i, tk := range tokens {
		if tk.Position == nil {
			continue
		}
		var crossed Limit
		at := tk
		switch tk.Type {
		case token.DocumentHeaderType, token.DocumentEndType:
			blocks, flow = blocks[:0], flow[:0]
		case token.SequenceStartType, token.MappingStartType:
			if len(blocks)+len(flow) > maxDepth {
				crossed = TooDeep
			}
			flow = append(flow, tk.Type)
		case token.SequenceEndType, token.MappingEndType:
			if len(flow) > 0 {
				flow = flow[:len(flow)-1]
			}
		case token.CollectEntryType:
			if l.CommaIsValue || (len(flow) > 0 && flow[len(flow)-1] == token.SequenceStartType) {
				values++
			}
		case token.SequenceEntryType:
			values++
			if len(flow) == 0 {
				crossed = open(tk, true)
			}
		case token.MappingKeyType:
			if len(flow) == 0 {
				crossed = open(tk, false)
			}
		case token.MappingValueType:
			values++
			if len(flow) > 0 {
				break
			}
			// The key starts at the first token of its line after a "-",
			// a "?" or a ":": anchors and tags come before its text.
			j := i - 1
			for j >= 0 && tokens[j].Position != nil && tokens[j].Position.Line == tk.Position.Line &&
				tokens[j].Type != token.SequenceEntryType && tokens[j].Type != token.MappingKeyType && tokens[j].Type != token.MappingValueType {
				j--
			}
			explicit := j >= 0 && tokens[j].Type == token.MappingKeyType && tokens[j].Position != nil && tokens[j].Position.Line == tk.Position.Line
			if j+1 < i && !explicit && tokens[j+1].Position != nil { // not the ":" of a "?" key, nor one that starts its line
				at = tokens[j+1]
				crossed = open(at, false)
			}
		}
		if crossed != 0 {
			return at, crossed
		}
		if values > maxValues {
			return tk, TooManyValues
		}
	}
	return nil, 0
}
