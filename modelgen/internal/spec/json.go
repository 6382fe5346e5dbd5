package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// jsonParser reads a JSON spec with the tokenizer of encoding/json, which
// says where each token starts, into the spec's tree: exact positions,
// duplicate keys rejected, nesting and size bounded.
type jsonParser struct {
	dec      *json.Decoder
	data     []byte
	li       *lineIndex
	nodes    int
	maxNodes int
}

func parseJSON(file string, data []byte) (*Node, error) { return parseJSONMax(file, data, MaxNodes) }

func parseJSONMax(file string, data []byte, maxNodes int) (*Node, error) {
	p := &jsonParser{dec: json.NewDecoder(bytes.NewReader(data)), data: data, li: newLineIndex(file, data), maxNodes: maxNodes}
	p.dec.UseNumber()
	tok, off, err := p.next()
	if err == io.EOF {
		return nil, &Diagnostic{Pos: Pos{File: file, Line: 1, Col: 1}, Message: "empty spec"}
	}
	if err != nil {
		return nil, p.syntaxError(err, off)
	}
	n, err := p.value(tok, off, 0)
	if err != nil {
		return nil, err
	}
	if _, off, err := p.next(); err != io.EOF {
		return nil, &Diagnostic{Pos: p.li.pos(off), Message: "unexpected data after the top-level JSON value"}
	}
	return n, nil
}

// next returns the next token and the offset where it starts.
func (p *jsonParser) next() (json.Token, int, error) {
	off := int(p.dec.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	tok, err := p.dec.Token()
	return tok, off, err
}

func (p *jsonParser) syntaxError(err error, off int) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// A Decoder's offsets count from where its current scan began,
		// not from the document's start; Unmarshal of the whole document
		// finds the same error at its offset in the document.
		// (Offset counts the offending byte: it is the one before.)
		var v any
		if whole := json.Unmarshal(p.data, &v); errors.As(whole, &se) {
			err = whole
		}
		off = max(int(se.Offset)-1, 0)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		return &Diagnostic{Pos: p.li.pos(len(p.data)), Message: "unexpected end of JSON input"}
	}
	return &Diagnostic{Pos: p.li.pos(off), Message: strings.TrimPrefix(err.Error(), "json: ")}
}

func (p *jsonParser) value(tok json.Token, off, depth int) (*Node, error) {
	pos := p.li.pos(off)
	if p.nodes++; p.nodes > p.maxNodes {
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("spec has more than %d values", p.maxNodes)}
	}
	switch t := tok.(type) {
	case nil:
		return &Node{kind: NullNode, pos: pos}, nil
	case bool:
		return &Node{kind: BoolNode, pos: pos, str: strconv.FormatBool(t)}, nil
	case json.Number:
		if msg := numberRange(t.String()); msg != "" {
			return nil, &Diagnostic{Pos: pos, Message: msg}
		}
		return &Node{kind: NumberNode, pos: pos, str: canonicalNumber(t.String())}, nil
	case string:
		return &Node{kind: StringNode, pos: pos, str: t}, nil
	}
	if depth > MaxDepth {
		return nil, &Diagnostic{Pos: pos, Message: fmt.Sprintf("values nested deeper than %d levels", MaxDepth)}
	}
	if tok == json.Delim('[') {
		n := &Node{kind: ArrayNode, pos: pos}
		for {
			tok, off, err := p.next()
			if err != nil {
				return nil, p.syntaxError(err, off)
			}
			if tok == json.Delim(']') {
				return n, nil
			}
			it, err := p.value(tok, off, depth+1)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, it)
		}
	}
	n := &Node{kind: ObjectNode, pos: pos}
	seen := make(map[string]Pos)
	for {
		tok, off, err := p.next()
		if err != nil {
			return nil, p.syntaxError(err, off)
		}
		if tok == json.Delim('}') {
			return n, nil
		}
		key := tok.(string) // the decoder only yields string keys here
		kpos := p.li.pos(off)
		if first, dup := seen[key]; dup {
			return nil, &Diagnostic{Pos: kpos, Message: fmt.Sprintf("duplicate key %q (first at %d:%d)", key, first.Line, first.Col)}
		}
		seen[key] = kpos
		tok, off, err = p.next()
		if err != nil {
			return nil, p.syntaxError(err, off)
		}
		v, err := p.value(tok, off, depth+1)
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, key)
		n.keyPos = append(n.keyPos, kpos)
		n.vals = append(n.vals, v)
	}
}

// numberRange says what is wrong with a JSON number that a float64 cannot
// hold, as a YAML spec cannot hold one: beyond its range (1e400), or so
// close to 0 that it would be read as 0 (1e-400). Such numbers mean
// nothing in a spec, and the JSON Schema validator's exact arithmetic on
// them takes 15 ms and 300 KB for 1e999999 (and fails, crashing it, from
// 1e1000001 on).
func numberRange(lit string) string {
	f, err := strconv.ParseFloat(lit, 64)
	short := lit
	if len(short) > 40 {
		short = short[:20] + "…" + short[len(short)-10:]
	}
	mant, _, _ := strings.Cut(strings.ToLower(lit), "e")
	switch {
	case err != nil:
		return fmt.Sprintf("number %s is beyond the range of a float64 (±%g)", short, math.MaxFloat64)
	case f == 0 && strings.ContainsAny(mant, "123456789"):
		return fmt.Sprintf("number %s is too close to 0 for a float64, which reads it as 0", short)
	}
	return ""
}
