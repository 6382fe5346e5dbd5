package automata

// TrackedArrays returns how many backing arrays Append is keeping claims for.
func TrackedArrays() int {
	n := 0
	claims.Range(func(any, any) bool { n++; return true })
	return n
}
