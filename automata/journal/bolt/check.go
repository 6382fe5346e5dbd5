package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/bits"
	"os"

	"github.com/moora-go/moora/automata/journal"
)

// checkBoltFile reads a bbolt file through f, never through a memory map, and
// checks everything bbolt will trust when it opens the file: the two meta
// pages, the file's length against the chosen meta's high-water mark, the
// synced free list if there is one, and every page of the tree, as deep as
// bbolt's open-time walk (freepages) reads it. That walk runs on a goroutine
// of bbolt's own, where neither recover nor debug.SetPanicOnFault can reach:
// anything it would trip on must be found here first.
//
// It reports fresh for an empty file, and for one that no transaction ever
// committed to (bbolt initialised it, and the process stopped before the
// buckets were created): only then may Open write to it. Damage is a
// *CorruptError naming the file, the page and its offset, and what was
// expected; the file is not changed. A file of the other layout (a fleet
// opened as one store, or the reverse) is a plain error that says so.
//
// In a fleet, damage that bbolt itself does not see (an agent's meta that
// does not decode, a key or bucket in its journal that the fleet never
// writes, its journal cut short) is the agent's alone: it is reported in
// agents, by id, and the file opens. Damage to the pages (what bbolt's walk
// would trip on, in any agent) refuses the file, naming the agent whose
// pages hold it.
//
// The layout is bbolt v1.5.0's (go.etcd.io/bbolt/internal/common: meta.go,
// page.go, bucket.go, inode.go), in the machine's byte order, as bbolt
// writes it. A bbolt that changed it would change the meta's version, which
// this check refuses: upgrading bbolt means reading its layout again (the
// damage tests' undamaged stores fail until then).
func checkBoltFile(f *os.File, path string, layout *boltLayout, acceptRollback bool) (boltChecked, error) {
	info, err := f.Stat()
	if err != nil {
		return boltChecked{}, err
	}
	if info.Size() == 0 {
		return boltChecked{fresh: true}, nil // a new file; bbolt writes its first pages
	}
	c := &boltCheck{f: f, path: path, size: info.Size(), layout: layout}
	m, err := c.chooseMeta(acceptRollback)
	if err != nil {
		return boltChecked{}, err
	}
	if err := c.checkMeta(m); err != nil {
		return boltChecked{}, err
	}
	c.pageSize, c.hwm = int64(m.pageSize), m.pgid
	c.seen = make([]uint64, (m.pgid+63)/64)
	c.mark(0) // the meta pages
	c.mark(1)

	root := boltBucket{name: "the root bucket", root: m.root}
	found := boltRoot{c: c}
	if err := c.bucket(root, 0, found.visit); err != nil {
		return boltChecked{}, err
	}
	if err := c.checkFreelist(m); err != nil {
		return boltChecked{}, err
	}
	if m.txid < 2 && found.entries == 0 {
		return boltChecked{fresh: true}, nil // initialised by bbolt, never committed to
	}
	return boltChecked{agents: found.agents}, found.check(m)
}

// boltChecked is what checkBoltFile found: a file to initialise, or the
// agents of a fleet that are damaged, by id.
type boltChecked struct {
	fresh  bool
	agents map[string]*journal.CorruptError
}

// The bbolt file format (v1.5.0). A page starts with a 16-byte header: id
// uint64, flags uint16, count uint16, overflow uint32. A meta page's header is
// followed by the meta; a branch or leaf page's by count 16-byte elements,
// then their keys (and values), packed in element order.
const (
	boltPageHeader = 16
	boltElement    = 16 // a branch or leaf element
	boltMetaSize   = 64 // the meta, checksum included, after the page header
	boltSummed     = 56 // the meta's bytes that its FNV-64a checksum covers
	boltBucketHead = 16 // a bucket value: root page id, sequence; an inline page follows when root is 0

	boltBranchPage   = 0x01
	boltLeafPage     = 0x02
	boltFreelistPage = 0x10
	boltBucketEntry  = 0x01 // a leaf element's flag: its value is a bucket

	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltNoFreelist = ^uint64(0)

	boltMinPage  = 1 << 10 // page sizes bbolt looks for the second meta page at
	boltMaxPage  = 1 << 24
	boltMaxDepth = 64      // deeper than any tree bbolt builds in a file that fits a disk
	boltReadHead = 1 << 16 // bytes of a page read at once; beyond, only what is needed
)

var boltOrder = binary.NativeEndian // bbolt writes its structs as they lie in memory

type boltCheck struct {
	f        *os.File
	path     string
	layout   *boltLayout
	size     int64
	pageSize int64
	hwm      uint64   // the chosen meta's high-water mark: pages 0..hwm-1 are the file's
	seen     []uint64 // a bit per page reached (tree, meta, free list)
	bufs     [][]byte // one read buffer per tree depth

	// A window of the file read at once: bbolt allocates the pages of a
	// growing journal mostly in order, so one read serves many.
	window   []byte
	windowAt int64
}

// boltWindow is the size of the read window.
const boltWindow = 1 << 18

// readAt fills buf from the file at offset at, which the caller has checked
// lies within the file's pages.
func (c *boltCheck) readAt(buf []byte, at int64) error {
	if len(buf) > boltWindow/4 {
		if _, err := c.f.ReadAt(buf, at); err != nil {
			return fmt.Errorf("journal: reading %s at %d: %w", c.path, at, err)
		}
		return nil
	}
	if at < c.windowAt || at+int64(len(buf)) > c.windowAt+int64(len(c.window)) {
		if c.window == nil {
			c.window = make([]byte, boltWindow)
		}
		end := min(at+boltWindow, int64(c.hwm)*c.pageSize)
		c.windowAt, c.window = at, c.window[:end-at]
		if _, err := c.f.ReadAt(c.window, at); err != nil {
			c.window = c.window[:0]
			return fmt.Errorf("journal: reading %s at %d: %w", c.path, at, err)
		}
	}
	copy(buf, c.window[at-c.windowAt:])
	return nil
}

// damage is a *CorruptError about the file.
func (c *boltCheck) damage(format string, args ...any) error {
	return &journal.CorruptError{Err: fmt.Errorf("%s: "+format, append([]any{c.path}, args...)...)}
}

// mark records that page id is reached; it reports false if it already was.
func (c *boltCheck) mark(id uint64) bool {
	w, b := id/64, uint64(1)<<(id%64)
	if c.seen[w]&b != 0 {
		return false
	}
	c.seen[w] |= b
	return true
}

type boltMeta struct {
	at       int64 // its offset in the file
	page     int   // 0 or 1
	raw      [boltMetaSize]byte
	pageSize uint32
	root     uint64 // the root bucket's page
	freelist uint64
	pgid     uint64 // high-water mark
	txid     uint64
	checksum uint64
	bad      error // why bbolt would not use it; nil: valid
	short    bool  // the file ends before it
}

func (c *boltCheck) readMeta(page int, at int64) boltMeta {
	m := boltMeta{at: at, page: page}
	var buf [boltPageHeader + boltMetaSize]byte
	if n, err := c.f.ReadAt(buf[:], at); n < len(buf) {
		m.short = true
		m.bad = fmt.Errorf("cannot be read: the file is %d bytes (%v)", c.size, err)
		return m
	}
	copy(m.raw[:], buf[boltPageHeader:])
	magic := boltOrder.Uint32(m.raw[0:])
	version := boltOrder.Uint32(m.raw[4:])
	m.pageSize = boltOrder.Uint32(m.raw[8:])
	m.root = boltOrder.Uint64(m.raw[16:]) // root InBucket{root, sequence}
	m.freelist = boltOrder.Uint64(m.raw[32:])
	m.pgid = boltOrder.Uint64(m.raw[40:])
	m.txid = boltOrder.Uint64(m.raw[48:])
	m.checksum = boltOrder.Uint64(m.raw[56:])
	switch sum := boltMetaSum(m.raw); {
	case magic != boltMagic:
		m.bad = fmt.Errorf("magic %#x, expected %#x", magic, boltMagic)
	case version != boltVersion:
		m.bad = fmt.Errorf("version %d, expected %d", version, boltVersion)
	case m.checksum != sum:
		m.bad = fmt.Errorf("checksum %#016x, expected %#016x", m.checksum, sum)
	case m.txid%2 != uint64(page):
		// bbolt writes transaction t's meta to page t%2: this is the other
		// page's meta, written or copied to the wrong place, and what this
		// page held is lost.
		m.bad = fmt.Errorf("it holds txid %d, which bbolt writes to meta page %d (a misdirected write)", m.txid, 1-page)
	}
	return m
}

func boltMetaSum(raw [boltMetaSize]byte) uint64 {
	h := fnv.New64a()
	h.Write(raw[:boltSummed])
	return h.Sum64()
}

func (m boltMeta) String() string { return fmt.Sprintf("meta page %d (offset %d)", m.page, m.at) }

// chooseMeta reads both meta pages, as bbolt finds them, and returns the one
// bbolt will open: the valid one with the higher txid.
//
// When exactly one is damaged, bbolt silently opens the other. That is
// harmless when the damaged one is the older copy (txid one less than the
// valid one's): bbolt keeps two metas and overwrites the older at the next
// commit. Otherwise the damaged one may have been the newer, and the commit
// it recorded acknowledged: opening would roll the store back one
// transaction, losing its inputs, and chooseMeta refuses unless
// acceptRollback. A damaged txid that still reads one less is caught when the
// checksum matches the page with the txid one more. What cannot be told apart
// is a meta page torn by a crash in the middle of its write (whose commit was
// not acknowledged, so the rollback is right) from one damaged afterwards:
// both are refused. Meta writes are 80 bytes within one sector, which disks
// write whole; the refusal names the way out.
func (c *boltCheck) chooseMeta(acceptRollback bool) (boltMeta, error) {
	m0 := c.readMeta(0, 0)
	pageSize := int64(m0.pageSize)
	if m0.bad != nil {
		// Look for the second meta page where bbolt does: at each
		// possible page size.
		pageSize = 0
		for at := int64(boltMinPage); at <= boltMaxPage && at < c.size-boltMinPage; at <<= 1 {
			if m := c.readMeta(1, at); m.bad == nil {
				pageSize = int64(m.pageSize)
				break
			}
		}
		if pageSize == 0 {
			return m0, c.damage("neither meta page is valid: %v: %v; and no valid meta page 1 at any page size from %d to %d bytes", m0, m0.bad, boltMinPage, boltMaxPage)
		}
	}
	if pageSize < boltMinPage || pageSize > boltMaxPage || bits.OnesCount64(uint64(pageSize)) != 1 {
		return m0, c.damage("the meta pages give a page size of %d bytes, expected a power of two from %d to %d", pageSize, boltMinPage, boltMaxPage)
	}
	m1 := c.readMeta(1, pageSize)
	if m1.short {
		return m1, c.damage("the file is %d bytes, too short to hold its second meta page at offset %d: it was truncated", c.size, pageSize)
	}
	for _, m := range []boltMeta{m0, m1} {
		if m.bad == nil && int64(m.pageSize) != pageSize {
			return m, c.damage("%v gives a page size of %d bytes, but the file's pages are %d bytes", m, m.pageSize, pageSize)
		}
	}
	switch {
	case m0.bad != nil && m1.bad != nil:
		return m0, c.damage("neither meta page is valid: %v: %v; %v: %v", m0, m0.bad, m1, m1.bad)
	case m0.bad == nil && m1.bad == nil:
		if m1.txid > m0.txid {
			return m1, nil
		}
		return m0, nil
	}
	valid, bad := m0, m1
	if m0.bad != nil {
		valid, bad = m1, m0
	}
	if olderCopy(valid, bad) || acceptRollback {
		return valid, nil
	}
	holds := "cannot be read"
	if !bad.short {
		holds = fmt.Sprintf("reads txid %d", bad.txid)
	}
	return valid, c.damage("%v is damaged (%v) and %s, while %v holds txid %d: the damaged one may be the newer, so opening would roll the store back to transaction %d and lose the last commit, which may hold acknowledged inputs; to open at transaction %d anyway, on purpose, use %s",
		bad, bad.bad, holds, valid, valid.txid, valid.txid, valid.txid, c.layout.rollback)
}

// olderCopy reports whether the damaged meta page bad is the copy bbolt
// wrote before valid: it reads txid valid.txid-1, and it does not check out
// as the next transaction's page whose txid alone was damaged.
func olderCopy(valid, bad boltMeta) bool {
	if bad.short || valid.txid == 0 || bad.txid != valid.txid-1 {
		return false
	}
	next := bad.raw
	boltOrder.PutUint64(next[48:], valid.txid+1)
	return boltMetaSum(next) != bad.checksum
}

// checkMeta checks the fields of the chosen meta that the walk relies on,
// and the file's length against its high-water mark: bbolt maps the file,
// and a page beyond its end faults.
func (c *boltCheck) checkMeta(m boltMeta) error {
	if m.pgid < 3 || m.root < 2 || m.root >= m.pgid {
		return c.damage("%v gives the root bucket page %d and the high-water mark %d, expected 2 <= root < high-water mark", m, m.root, m.pgid)
	}
	if m.pgid > uint64(c.size)/uint64(m.pageSize) {
		return c.damage("the file is %d bytes, but %v (txid %d) has pages up to page %d of %d bytes, which end at byte %d: it was truncated", c.size, m, m.txid, m.pgid-1, m.pageSize, m.pgid*uint64(m.pageSize))
	}
	return nil
}

// checkFreelist checks a synced free list (the store does not write one,
// but bbolt writes an empty one into a new file, and other bbolt programs
// may sync one): bbolt reads it at open and allocates its pages.
func (c *boltCheck) checkFreelist(m boltMeta) error {
	if m.freelist == boltNoFreelist {
		return nil
	}
	p, err := c.page(m.freelist, "the free list", boltFreelistPage, 0)
	if err != nil {
		return err
	}
	first, n := int64(boltPageHeader), int64(p.count)
	if p.count == 0xFFFF { // the count is the first element
		head, err := p.read(boltPageHeader, 8)
		if err != nil {
			return err
		}
		first, n = boltPageHeader+8, int64(boltOrder.Uint64(head))
	}
	if n < 0 || n > p.span/8 || first+8*n > p.span {
		return p.damage("it lists %d page ids, more than its %d bytes hold", n, p.span)
	}
	ids, err := p.read(first, 8*n)
	if err != nil {
		return err
	}
	for i := range n {
		id := boltOrder.Uint64(ids[8*i:])
		if id < 2 || id >= c.hwm {
			return p.damage("free page id %d (entry %d) is outside the file's pages 2..%d", id, i, c.hwm-1)
		}
		if !c.mark(id) {
			return p.damage("free page id %d (entry %d) is in use, or listed twice", id, i)
		}
	}
	return nil
}

// boltPage is a page being checked, or an inline bucket's page inside the
// value that holds it.
type boltPage struct {
	c        *boltCheck
	id       uint64
	at       int64 // offset in the file
	span     int64 // bytes it covers: (overflow+1) pages, or the inline value's page bytes
	head     []byte
	flags    uint16
	count    int64
	inline   bool
	where    string // its bucket, for messages
	parent   *boltPage
	parentAt int64 // where the inline page begins in parent
}

func (p *boltPage) describe() string {
	if p.inline {
		return fmt.Sprintf("the inline page of %s at byte %d of %s", p.where, p.parentAt, p.parent.describe())
	}
	return fmt.Sprintf("page %d (offset %d) of %s", p.id, p.at, p.where)
}

func (p *boltPage) damage(format string, args ...any) error {
	return p.c.damage("%s: "+format, append([]any{p.describe()}, args...)...)
}

// read returns n bytes of the page from offset off; the caller has checked
// that they lie within its span.
func (p *boltPage) read(off, n int64) ([]byte, error) {
	if off+n <= int64(len(p.head)) {
		return p.head[off : off+n], nil
	}
	buf := make([]byte, n)
	if err := p.c.readAt(buf, p.at+off); err != nil {
		return nil, err
	}
	return buf, nil
}

// page reads the header of page id, which must be of type kind (0: branch
// or leaf) and lie with its overflow within the file, and marks its pages
// reached: a page reached twice is damage (bbolt would free it while in use,
// or loop).
func (c *boltCheck) page(id uint64, where string, kind uint16, depth int) (*boltPage, error) {
	if id < 2 || id >= c.hwm {
		return nil, c.damage("%s points to page %d, outside the file's pages 2..%d", where, id, c.hwm-1)
	}
	for len(c.bufs) <= depth {
		c.bufs = append(c.bufs, make([]byte, min(c.pageSize, boltReadHead)))
	}
	p := &boltPage{c: c, id: id, at: int64(id) * c.pageSize, where: where}
	head := c.bufs[depth][:min(c.pageSize, boltReadHead)]
	if err := c.readAt(head, p.at); err != nil {
		return nil, err
	}
	self := boltOrder.Uint64(head[0:])
	p.flags = boltOrder.Uint16(head[8:])
	p.count = int64(boltOrder.Uint16(head[10:]))
	overflow := uint64(boltOrder.Uint32(head[12:]))
	switch {
	case self != id:
		return nil, p.damage("its header says page %d", self)
	case kind == 0 && p.flags != boltBranchPage && p.flags != boltLeafPage:
		return nil, p.damage("type flags %#x, expected a branch (%#x) or leaf (%#x) page", p.flags, boltBranchPage, boltLeafPage)
	case kind != 0 && p.flags != kind:
		return nil, p.damage("type flags %#x, expected %#x", p.flags, kind)
	case overflow >= c.hwm-id:
		return nil, p.damage("it overflows into %d more pages, past the file's last page %d", overflow, c.hwm-1)
	}
	for i := range overflow + 1 {
		if !c.mark(id + i) {
			return nil, p.damage("page %d is reached a second time", id+i)
		}
	}
	p.span = int64(overflow+1) * c.pageSize
	if want := min(p.span, boltReadHead); int64(len(head)) < want {
		if cap(c.bufs[depth]) < int(want) {
			c.bufs[depth] = make([]byte, want)
		}
		head = c.bufs[depth][:want]
		if err := c.readAt(head, p.at); err != nil {
			return nil, err
		}
	}
	p.head = head
	return p, nil
}

// boltBucket is a bucket to check: its root page, or (root 0) its inline page
// in the value that holds it.
type boltBucket struct {
	name   string
	root   uint64
	value  []byte // the bucket's value, when inline
	parent *boltPage
	at     int64 // the value's offset in parent
}

// boltEntry is a leaf element of a bucket, as the checker passes it on.
type boltEntry struct {
	page  *boltPage
	index int64
	flags uint32
	key   []byte // valid during the call
	at    int64  // the value's offset in page
	size  int64  // the value's length
	depth int
}

func (e boltEntry) damage(format string, args ...any) error {
	return e.page.damage("leaf element %d of %d (key %x): "+format, append([]any{e.index, e.page.count, e.key}, args...)...)
}

// value reads the entry's value.
func (e boltEntry) value() ([]byte, error) { return e.page.read(e.at, e.size) }

// bucket checks the tree of bucket b and calls leaf with each of its
// entries, in key order.
func (c *boltCheck) bucket(b boltBucket, depth int, leaf func(boltEntry) error) error {
	if b.root != 0 {
		p, err := c.page(b.root, b.name, 0, depth)
		if err != nil {
			return err
		}
		return c.tree(p, nil, nil, true, depth, leaf)
	}
	p := &boltPage{c: c, inline: true, where: b.name, parent: b.parent, parentAt: b.at,
		head: b.value[boltBucketHead:], span: int64(len(b.value) - boltBucketHead)}
	if p.span < boltPageHeader {
		return p.damage("it is %d bytes, shorter than a page header", p.span)
	}
	p.flags = boltOrder.Uint16(p.head[8:])
	p.count = int64(boltOrder.Uint16(p.head[10:]))
	if p.flags != boltLeafPage {
		return p.damage("type flags %#x, expected a leaf page (%#x)", p.flags, boltLeafPage)
	}
	return c.tree(p, nil, nil, true, depth, func(e boltEntry) error {
		if e.flags&boltBucketEntry != 0 {
			return e.damage("an inline bucket holds a bucket, which bbolt never writes")
		}
		return leaf(e)
	})
}

// tree checks page p, whose keys must lie in [lo, hi) (nil: unbounded), and
// the pages below it. The elements must be laid out as bbolt writes them:
// packed, each key (and value) right after the previous one, the first right
// after the element array; and their keys must be in strictly increasing
// order. That catches a damaged count, position or size, not only a pointer
// out of bounds.
func (c *boltCheck) tree(p *boltPage, lo, hi []byte, root bool, depth int, leaf func(boltEntry) error) error {
	if depth > boltMaxDepth {
		return p.damage("the tree is more than %d levels deep", boltMaxDepth)
	}
	isLeaf := p.flags == boltLeafPage
	if p.count == 0 && (!isLeaf || !root) {
		return p.damage("it has no elements, which bbolt only writes for an empty bucket's root leaf")
	}
	next := boltPageHeader + boltElement*p.count // where the next key must start
	if next > p.span {
		return p.damage("its %d elements need %d bytes, more than its %d", p.count, next, p.span)
	}
	elems, err := p.read(boltPageHeader, boltElement*p.count)
	if err != nil {
		return err
	}
	type child struct {
		id  uint64
		key []byte
	}
	var children []child
	var prev []byte
	for i := range p.count {
		e := elems[boltElement*i:]
		elemAt := boltPageHeader + boltElement*i
		var flags, pos, ksize, vsize uint32
		var id uint64
		if isLeaf {
			flags, pos = boltOrder.Uint32(e[0:]), boltOrder.Uint32(e[4:])
			ksize, vsize = boltOrder.Uint32(e[8:]), boltOrder.Uint32(e[12:])
		} else {
			pos, ksize = boltOrder.Uint32(e[0:]), boltOrder.Uint32(e[4:])
			id = boltOrder.Uint64(e[8:])
		}
		kind := "branch"
		if isLeaf {
			kind = "leaf"
		}
		if at := elemAt + int64(pos); at != next {
			return p.damage("%s element %d of %d: its key is at byte %d, expected %d, right after the previous element's data", kind, i, p.count, at, next)
		}
		if ksize == 0 {
			return p.damage("%s element %d of %d: an empty key", kind, i, p.count)
		}
		end := next + int64(ksize) + int64(vsize)
		if end > p.span {
			return p.damage("%s element %d of %d: its key and value end at byte %d, past the page's %d", kind, i, p.count, end, p.span)
		}
		key, err := p.read(next, int64(ksize))
		if err != nil {
			return err
		}
		// Keys increase within the page, so the bounds its parent sets
		// are checked on its first and last key.
		switch {
		case prev != nil && compareKeys(prev, key) >= 0:
			return p.damage("%s element %d of %d: key %x does not follow key %x", kind, i, p.count, key, prev)
		case prev == nil && lo != nil && compareKeys(key, lo) < 0:
			return p.damage("%s element %d of %d: key %x is below %x, where its parent branch puts the page", kind, i, p.count, key, lo)
		case i == p.count-1 && hi != nil && compareKeys(key, hi) >= 0:
			return p.damage("%s element %d of %d: key %x is not below %x, where its parent branch puts the next page", kind, i, p.count, key, hi)
		}
		prev = key
		if isLeaf {
			if flags&^boltBucketEntry != 0 {
				return p.damage("leaf element %d of %d: flags %#x, expected 0 or %#x", i, p.count, flags, boltBucketEntry)
			}
			err := leaf(boltEntry{page: p, index: i, flags: flags, key: key, at: next + int64(ksize), size: int64(vsize), depth: depth})
			if err != nil {
				return err
			}
		} else {
			children = append(children, child{id, key})
		}
		next = end
	}
	if p.inline && next != p.span {
		return p.damage("its elements end at byte %d, but the bucket value holds %d", next, p.span)
	}
	for i, ch := range children {
		end := hi
		if i+1 < len(children) {
			end = children[i+1].key
		}
		if ch.id < 2 || ch.id >= c.hwm {
			return p.damage("branch element %d of %d points to page %d, outside the file's pages 2..%d", i, p.count, ch.id, c.hwm-1)
		}
		cp, err := c.page(ch.id, p.where, 0, depth+1)
		if err != nil {
			return err
		}
		if err := c.tree(cp, ch.key, end, false, depth+1, leaf); err != nil {
			return err
		}
	}
	return nil
}

// compareKeys is bytes.Compare, quicker for the store's 8-byte keys.
func compareKeys(a, b []byte) int {
	if len(a) == 8 && len(b) == 8 {
		x, y := binary.BigEndian.Uint64(a), binary.BigEndian.Uint64(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return bytes.Compare(a, b)
}

// subBucket checks the bucket whose value is entry e's, calling leaf with
// its entries; it returns the bucket's sequence.
func (c *boltCheck) subBucket(e boltEntry, name string, leaf func(boltEntry) error) (uint64, error) {
	if e.size < boltBucketHead {
		return 0, e.damage("a bucket value of %d bytes, shorter than a bucket header (%d)", e.size, boltBucketHead)
	}
	v, err := e.page.read(e.at, boltBucketHead)
	if err != nil {
		return 0, err
	}
	root, seq := boltOrder.Uint64(v[0:]), boltOrder.Uint64(v[8:])
	b := boltBucket{name: name, root: root, parent: e.page, at: e.at}
	if root == 0 {
		if b.value, err = e.value(); err != nil {
			return 0, err
		}
	} else if e.size != boltBucketHead {
		return 0, e.damage("a bucket at page %d with a value of %d bytes, expected %d", root, e.size, boltBucketHead)
	}
	return seq, c.bucket(b, e.depth+1, leaf)
}

// genericBucket checks the bucket whose value is entry e's, which is not
// the store's, as bbolt would read it.
func (c *boltCheck) genericBucket(e boltEntry, name string) error {
	_, err := c.subBucket(e, name, func(r boltEntry) error {
		if r.flags&boltBucketEntry == 0 {
			return nil
		}
		return c.genericBucket(r, fmt.Sprintf("bucket %q", r.key))
	})
	return err
}

// boltRoot collects what the root bucket holds, for check: a store's three
// buckets, or a fleet's five.
type boltRoot struct {
	c       *boltCheck
	entries int
	store   journalBuckets                   // the store's buckets at the root
	fleet   [5]bool                          // the fleet's buckets: fleetRootBuckets
	agents  map[string]*journal.CorruptError // a fleet's damaged agents
}

// visit is the leaf function of the root bucket: each entry must be a
// bucket; the store's and the fleet's are checked as they write them, any
// other as bbolt would read it.
func (r *boltRoot) visit(e boltEntry) error {
	r.entries++
	if e.flags&boltBucketEntry == 0 {
		return e.damage("the root bucket holds a plain value, which bbolt never writes")
	}
	if handled, err := r.store.visit(r.c, e); handled {
		return err
	}
	for i, name := range fleetRootBuckets {
		if !bytes.Equal(e.key, name) {
			continue
		}
		r.fleet[i] = true
		if !r.c.layout.fleet {
			break
		}
		where := "bucket " + string(name)
		switch i {
		case 0:
			_, err := r.c.subBucket(e, where, r.meta)
			return err
		case 1, 2, 3:
			_, err := r.c.subBucket(e, where, func(a boltEntry) error { return r.journal(a, i-1) })
			return err
		}
		// The log's entries are read, and checked, as the fleet opens.
		break
	}
	return r.c.genericBucket(e, fmt.Sprintf("bucket %q", e.key))
}

// meta checks the entry of an agent in bucket agents: its AgentInfo. What is
// wrong with it but not with the pages is the agent's alone: it is recorded
// in r.agents, and the walk goes on.
func (r *boltRoot) meta(e boltEntry) error {
	id := string(e.key)
	if err := journal.CheckAgentID(id); err != nil {
		r.record(id, e.damage("bucket agents holds a key that is no agent's id: %v", err))
	}
	if e.flags&boltBucketEntry != 0 {
		r.record(id, e.damage("agent %q: bucket agents holds a bucket under its id, not its meta", id))
		return r.c.genericBucket(e, fmt.Sprintf("bucket %q in bucket agents", e.key))
	}
	v, err := e.value()
	if err != nil {
		return err
	}
	if _, err := decodeAgentMeta(r.c.path, id, v); err != nil {
		r.record(id, err)
	}
	return nil
}

// journal checks the entry of an agent in the fleet's bucket for its
// journal's bucket i (inputs, snapshots, quarantine): the agent's bucket,
// checked as a store's. What is wrong with it but not with the pages is the
// agent's alone: it is recorded in r.agents, and the walk goes on.
func (r *boltRoot) journal(e boltEntry, i int) error {
	id := string(e.key)
	if e.flags&boltBucketEntry == 0 {
		r.record(id, e.damage("agent %q: bucket %s holds a plain value under its id, not its bucket %s", id, fleetJournalBuckets[i], journalBucketNames[i]))
		return nil
	}
	j := journalBuckets{agent: id}
	if err := j.visitBucket(r.c, e, i); err != nil {
		return err
	}
	if i == 0 {
		j.fail(j.checkEnd(r.c))
	}
	r.record(id, j.damage)
	return nil
}

// record notes damage (if any) of agent id, unless some is noted already.
func (r *boltRoot) record(id string, damage error) {
	var ce *journal.CorruptError
	if !errors.As(damage, &ce) || r.agents[id] != nil {
		return
	}
	if r.agents == nil {
		r.agents = map[string]*journal.CorruptError{}
	}
	r.agents[id] = ce
}

// check reports what the root lacks for its layout: a store's three buckets,
// with the damage found in them; a fleet's five. A file of the other layout
// is told apart by what it holds instead.
func (r *boltRoot) check(m boltMeta) error {
	c, store, fleet := r.c, r.store.have != [3]bool{}, r.fleet != [5]bool{}
	if !c.layout.fleet {
		if fleet && !store {
			return errors.New("it holds a fleet of agents, not one agent's store: open it with bolt.OpenFleet")
		}
		if r.store.damage != nil {
			return r.store.damage
		}
		if err := r.store.check(c, fmt.Sprintf("the root bucket (page %d, %v, txid %d)", m.root, m, m.txid), ": the page is damaged, or this is not a journal store"); err != nil {
			return err
		}
		return r.store.checkEnd(c)
	}
	if store && !fleet {
		return errors.New("it holds one agent's store, not a fleet: open it with bolt.Open")
	}
	for i, name := range fleetRootBuckets {
		if !r.fleet[i] {
			return c.damage("the root bucket (page %d, %v, txid %d) has no bucket %q: the page is damaged, or this is not a fleet", m.root, m, m.txid, name)
		}
	}
	return nil
}

// journalBuckets collects what one journal's buckets hold, the root's of a
// store or an agent's of a fleet, for check.
type journalBuckets struct {
	agent     string  // the agent's id; "" for a store's
	have      [3]bool // inputs, snapshots, quarantine
	inputSeq  uint64  // the inputs bucket's sequence: the last seq appended
	lastInput uint64
	inputs    int
	damage    error // the first damage to the records, which bbolt does not see
}

var journalBucketNames = [3][]byte{bucketInputs, bucketSnapshots, bucketQuarantine}

// fail notes err, if it is the first damage.
func (j *journalBuckets) fail(err error) {
	if j.damage == nil {
		j.damage = err
	}
}

// visit checks entry e with visitBucket if it is one of the journal's
// buckets, and reports whether it was.
func (j *journalBuckets) visit(c *boltCheck, e boltEntry) (bool, error) {
	for i, name := range journalBucketNames {
		if bytes.Equal(e.key, name) {
			return true, j.visitBucket(c, e, i)
		}
	}
	return false, nil
}

// visitBucket checks entry e, the journal's bucket i (inputs, snapshots,
// quarantine). It holds plain records under keys of a fixed length;
// anything else is damage to the journal, noted, and the walk goes on (a
// bucket where a record should be is checked as bbolt would read it).
func (j *journalBuckets) visitBucket(c *boltCheck, e boltEntry, i int) error {
	keyLen := 8 // seq
	if i == 2 {
		keyLen = 16 // seq, time moved
	}
	where := "bucket " + string(journalBucketNames[i])
	if j.agent != "" {
		where += fmt.Sprintf(" of agent %q", j.agent)
	}
	seq, err := c.subBucket(e, where, func(r boltEntry) error {
		switch {
		case r.flags != 0:
			j.fail(r.damage("a bucket inside %s, which the store never writes", where))
			return c.genericBucket(r, fmt.Sprintf("bucket %q in %s", r.key, where))
		case len(r.key) != keyLen:
			j.fail(r.damage("a key of %d bytes, expected %d", len(r.key), keyLen))
			return nil
		}
		if i == 0 {
			j.inputs++
			j.lastInput = binary.BigEndian.Uint64(r.key)
		}
		return nil
	})
	j.have[i] = true
	if i == 0 {
		j.inputSeq = seq
	}
	return err
}

// check reports a bucket missing from holder (why says what that may mean).
func (j *journalBuckets) check(c *boltCheck, holder, why string) error {
	for i, ok := range j.have {
		if !ok {
			return c.damage("%s has no bucket %q%s", holder, journalBucketNames[i], why)
		}
	}
	return nil
}

// checkEnd reports a journal that ends before the last append: Append
// records the last seq in the inputs bucket's sequence, in the same page as
// the bucket's root, so a journal cut short by a damaged page (a lost leaf, a
// branch pointing at a stale copy) is told from one that was never longer. A
// sequence of 0 is a store written before the sequence was kept, or whose
// journal was pruned empty: unchecked.
func (j *journalBuckets) checkEnd(c *boltCheck) error {
	in := ""
	if j.agent != "" {
		in = fmt.Sprintf("agent %q: ", j.agent)
	}
	switch {
	case j.inputSeq == 0:
	case j.inputs == 0:
		return c.damage("%sbucket inputs is empty, but the last append recorded seq %d: the journal's pages are damaged", in, j.inputSeq)
	case j.lastInput != j.inputSeq:
		return c.damage("%sthe journal's last record is seq %d, but the last append recorded seq %d: records at its end are lost (a damaged or stale page)", in, j.lastInput, j.inputSeq)
	}
	return nil
}
