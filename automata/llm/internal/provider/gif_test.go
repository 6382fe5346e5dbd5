package provider

import (
	"bytes"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"testing"
)

// animation is a GIF of n frames, as image/gif encodes it.
func animation(n int, local bool) []byte {
	g := &gif.GIF{}
	for i := range n {
		m := image.NewPaletted(image.Rect(0, 0, 3, 2), palette.Plan9)
		m.Set(i%3, 0, color.White)
		g.Image = append(g.Image, m)
		g.Delay = append(g.Delay, 10)
	}
	if !local {
		g.Config = image.Config{ColorModel: color.Palette(palette.Plan9), Width: 3, Height: 2}
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func TestGIFFrames(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		for _, local := range []bool{false, true} {
			if got := GIFFrames(animation(n, local)); got != n {
				t.Errorf("%d frames (local color tables %v): GIFFrames = %d", n, local, got)
			}
		}
	}
	cut := animation(3, false)
	if got := GIFFrames(cut[:len(cut)-1]); got != 3 {
		t.Errorf("a GIF without its trailer: %d frames, want 3", got)
	}
	if got := GIFFrames(cut[:len(cut)-8]); got != 3 {
		t.Errorf("a GIF cut in its last frame: %d frames, want 3", got)
	}
	if got := GIFFrames(cut[:800]); got != 0 {
		t.Errorf("a GIF cut in its color table: %d frames", got)
	}
	for _, junk := range []string{"", "GIF89a", "GIF89a\x01\x00\x01\x00\xff\x00\x00", "\x89PNG\r\n\x1a\n\x00\x00\x00\x00\x00\x00"} {
		if got := GIFFrames([]byte(junk)); got != 0 {
			t.Errorf("%q: %d frames", junk, got)
		}
	}
}

// FuzzGIFFrames: GIFFrames never panics, and counts the frames of a GIF
// that image/gif decodes whole.
func FuzzGIFFrames(f *testing.F) {
	f.Add(animation(1, false))
	f.Add(animation(3, true))
	f.Add(animation(2, false)[:40])
	f.Add([]byte("GIF89a\x01\x00\x01\x00\x80\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := GIFFrames(data)
		if n < 0 || n > len(data) {
			t.Fatalf("%d frames in %d bytes", n, len(data))
		}
		if len(data) > 1<<16 {
			return
		}
		if g, err := gif.DecodeAll(bytes.NewReader(data)); err == nil && len(g.Image) != n {
			t.Fatalf("image/gif decodes %d frames, GIFFrames counts %d", len(g.Image), n)
		}
	})
}
