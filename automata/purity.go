package automata

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
)

// ImpurityError reports a transition, an effect or a jobs function that
// broke purity.
type ImpurityError struct {
	Index int    // position of the input in the sequence checked; -1 in a running machine
	Input any    // the input whose transition did it
	Where string // "" for a transition; else the effect or jobs function, e.g. `the effect of actor "user"`
	Path  string // where, as a Go expression rooted at "state"
	What  string // what changed
}

func (e *ImpurityError) Error() string {
	if e.Where != "" {
		return fmt.Sprintf("automata: impure: %s %s", e.Where, e.What)
	}
	at := ""
	if e.Index >= 0 {
		at = fmt.Sprintf(" #%d", e.Index)
	}
	return fmt.Sprintf("automata: impure transition on input%s %#v: %s", at, e.Input, e.What)
}

// CheckPure applies inputs in order, starting from def.Initial(), and checks
// each transition:
//
//   - it must not change anything the state it was given can reach, including
//     the spare capacity of its slices (where append writes when the backing
//     array is shared: the classic impure transition);
//   - applied a second time to the same state and input it must give the same
//     result (a transition that reads the clock or a random source does not).
//
// It returns an *ImpurityError for the first violation, or nil. Use it in
// tests of a Definition; WithPurityCheck does the first check in a running
// machine.
func CheckPure[S, I any](def Definition[S, I], inputs ...I) error {
	state := def.Initial()
	if a, b := contents(state), contents(def.Initial()); !slices.Equal(a, b) {
		path, what := firstDifference(a, b)
		return &ImpurityError{Index: -1, Path: path, What: "Initial is not deterministic: " + what}
	}
	for i, in := range inputs {
		before := fingerprint(state)
		next := def.Transition(state, in)
		if err := mutated(before, state); err != nil {
			err.Index, err.Input = i, in
			return err
		}
		result := contents(next)
		again := def.Transition(state, in)
		if a := contents(again); !slices.Equal(result, a) {
			path, what := firstDifference(result, a)
			return &ImpurityError{Index: i, Input: in, Path: path, What: "not deterministic: applied twice, " + what}
		}
		state = next
	}
	return nil
}

// checkedTransition is Transition with the mutation check; it panics on a
// violation.
func checkedTransition[S, I any](transition func(S, I) S, state S, in I) S {
	before := fingerprint(state)
	next := transition(state, in)
	if err := mutated(before, state); err != nil {
		err.Index, err.Input = -1, in
		panic(err)
	}
	return next
}

func mutated[S any](before print, state S) *ImpurityError {
	after := fingerprint(state)
	if !slices.Equal(before.leaves, after.leaves) {
		path, what := firstDifference(before.leaves, after.leaves)
		return &ImpurityError{Path: path, What: "mutated the state it was given: " + what}
	}
	// Spare room of Append's arrays may have been claimed, and written, by
	// Append since: that is allowed. Unclaimed room must be untouched.
	for _, slot := range before.slots {
		if int64(slot.index) < slot.claim.n.Load() {
			continue
		}
		w := walker{seen: make(map[seenKey]bool), spare: true}
		w.walk(slot.elem, slot.path)
		if !slices.Equal(slot.leaves, w.leaves) {
			path, what := firstDifference(slot.leaves, w.leaves)
			return &ImpurityError{Path: path, What: "mutated the state it was given: " + what}
		}
	}
	return nil
}

// leaf is one scalar reachable from a state, with the path that reaches it.
// spare marks an element in a slice's spare capacity (between len and cap).
type leaf struct {
	path, value string
	spare       bool
}

// print is everything reachable from a state: its leaves, with the spare
// capacity of slices, and apart from them the spare slots of arrays Append
// owns, which are checked against their claim.
type print struct {
	leaves []leaf
	slots  []spareSlot
}

type spareSlot struct {
	claim  *claim
	index  int
	elem   reflect.Value // read again after the transition
	path   string
	leaves []leaf
}

func fingerprint[S any](state S) print {
	w := walker{seen: make(map[seenKey]bool), withSpare: true}
	w.walk(reflect.ValueOf(&state).Elem(), "state")
	return print{w.leaves, w.slots}
}

// contents is what a state holds, without spare capacity: what equality of
// results means.
func contents[S any](state S) []leaf {
	w := walker{seen: make(map[seenKey]bool)}
	w.walk(reflect.ValueOf(&state).Elem(), "state")
	return w.leaves
}

func firstDifference(a, b []leaf) (path, what string) {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		if a[i].path == b[i].path {
			what = fmt.Sprintf("%s changed from %s to %s", a[i].path, a[i].value, b[i].value)
			if a[i].spare {
				what += ", past the slice's length: append wrote into a backing array the old state shares (use automata.Append instead)"
			}
			return a[i].path, what
		}
		return b[i].path, fmt.Sprintf("%s appeared where %s was", b[i].path, a[i].path)
	}
	if len(a) > len(b) {
		return a[len(b)].path, a[len(b)].path + " was removed"
	}
	return b[len(a)].path, b[len(a)].path + " was added"
}

type seenKey struct {
	ptr uintptr
	typ reflect.Type
}

type walker struct {
	leaves    []leaf
	slots     []spareSlot
	seen      map[seenKey]bool
	withSpare bool // walk spare capacity too
	spare     bool // walking spare capacity
}

func (w *walker) add(path, value string) {
	w.leaves = append(w.leaves, leaf{path: path, value: value, spare: w.spare})
}

func (w *walker) walk(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Invalid:
		w.add(path, "nil")
	case reflect.Bool:
		w.add(path, strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.add(path, strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		w.add(path, strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		w.add(path, strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case reflect.Complex64, reflect.Complex128:
		w.add(path, strconv.FormatComplex(v.Complex(), 'g', -1, 128))
	case reflect.String:
		w.add(path, strconv.Quote(v.String()))
	case reflect.Pointer:
		if v.IsNil() {
			w.add(path, "nil")
			return
		}
		key := seenKey{v.Pointer(), v.Type()}
		if w.seen[key] {
			w.add(path, "(seen)")
			return
		}
		w.seen[key] = true
		w.walk(v.Elem(), path)
	case reflect.Interface:
		if v.IsNil() {
			w.add(path, "nil")
			return
		}
		w.add(path+".(type)", v.Elem().Type().String())
		w.walk(v.Elem(), path)
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			w.walk(v.Field(i), path+"."+t.Field(i).Name)
		}
	case reflect.Array:
		for i := range v.Len() {
			w.walk(v.Index(i), path+"["+strconv.Itoa(i)+"]")
		}
	case reflect.Slice:
		if v.IsNil() {
			w.add(path, "nil")
			return
		}
		n, c := v.Len(), v.Cap()
		w.add(path+".len", strconv.Itoa(n))
		if !w.withSpare {
			c = n
		}
		full := v.Slice3(0, c, c)
		var owned *claim
		if c > n {
			owned = claimAt(v.UnsafePointer())
		}
		spare := w.spare
		for i := range c {
			p := path + "[" + strconv.Itoa(i) + "]"
			if i >= n && owned != nil {
				sub := walker{seen: make(map[seenKey]bool), withSpare: true, spare: true}
				sub.walk(full.Index(i), p)
				w.slots = append(w.slots, spareSlot{owned, i, full.Index(i), p, sub.leaves})
				continue
			}
			w.spare = spare || i >= n
			w.walk(full.Index(i), p)
		}
		w.spare = spare
	case reflect.Map:
		if v.IsNil() {
			w.add(path, "nil")
			return
		}
		w.add(path+".len", strconv.Itoa(v.Len()))
		type entry struct {
			name string
			key  reflect.Value
		}
		entries := make([]entry, 0, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			entries = append(entries, entry{keyString(iter.Key()), iter.Key()})
		}
		slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.name, b.name) })
		for _, e := range entries {
			w.walk(v.MapIndex(e.key), path+"["+e.name+"]")
		}
	default: // func, chan, unsafe pointer: identity only
		if v.IsNil() {
			w.add(path, "nil")
			return
		}
		w.add(path, fmt.Sprintf("%s@%#x", v.Type(), v.Pointer()))
	}
}

func keyString(k reflect.Value) string {
	var w walker
	w.seen = make(map[seenKey]bool)
	w.walk(k, "")
	s := ""
	for i, l := range w.leaves {
		if i > 0 {
			s += ","
		}
		s += l.path + "=" + l.value
	}
	if len(w.leaves) == 1 && w.leaves[0].path == "" {
		return w.leaves[0].value
	}
	return s
}
