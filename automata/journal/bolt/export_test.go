package bolt

// FleetQueue returns how many Appends f has queued for its commits, and how
// many of them its commit loop has taken, since it opened.
func FleetQueue(f *Fleet) (enqueued, taken int64) {
	f.qmu.Lock()
	defer f.qmu.Unlock()
	return f.enqueued, f.taken
}
