package provider

// GIFFrames counts the frames (image descriptors) of the GIF in data, as
// far as its blocks can be read: it walks the header, the global color
// table, the extensions and the images' data sub-blocks without decoding
// any, and stops at the trailer, or at the first byte that is not where a
// GIF would have it. More than one frame is an animation.
func GIFFrames(data []byte) int {
	const header = 6 + 7 // "GIF89a", then the logical screen descriptor
	if len(data) < header {
		return 0
	}
	at := header
	if flags := data[10]; flags&0x80 != 0 { // a global color table
		at += 3 << (flags&7 + 1)
	}
	// subBlocks skips the data sub-blocks from at, to after their
	// terminator; false if data ends before.
	subBlocks := func() bool {
		for at < len(data) {
			n := int(data[at])
			at++
			if n == 0 {
				return true
			}
			at += n
		}
		return false
	}
	frames := 0
	for at < len(data) {
		switch data[at] {
		case 0x21: // an extension: its label, then sub-blocks
			at += 2
			if !subBlocks() {
				return frames
			}
		case 0x2C: // an image descriptor
			if at+10 > len(data) {
				return frames
			}
			frames++
			flags := data[at+9]
			at += 10
			if flags&0x80 != 0 { // a local color table
				at += 3 << (flags&7 + 1)
			}
			at++ // the LZW minimum code size
			if !subBlocks() {
				return frames
			}
		default: // the trailer (0x3B), or not a GIF's block
			return frames
		}
	}
	return frames
}
