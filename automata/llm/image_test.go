package llm

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// Images made by the standard library's encoders, and the smallest WebP
// file (the standard library has no WebP encoder): a RIFF header and a
// VP8L chunk of a 1×1 image.
var (
	testPNG  = Image{MediaType: "image/png", Data: encode(func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) })}
	testJPEG = encode(func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) })
	testGIF  = encode(func(b *bytes.Buffer, m image.Image) error { return gif.Encode(b, m, nil) })
	testWebP = []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
)

func encode(enc func(*bytes.Buffer, image.Image) error) []byte {
	m := image.NewRGBA(image.Rect(0, 0, 2, 2))
	m.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := enc(&b, m); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// FuzzCheckImage: checkImage never panics, and what it accepts is what
// the vendors take: a known media type, 1 to MaxImageBytes bytes, which
// sniff as that type.
func FuzzCheckImage(f *testing.F) {
	for _, mt := range ImageMediaTypes {
		f.Add(mt, testPNG.Data)
		f.Add(mt, testJPEG)
		f.Add(mt, testGIF)
		f.Add(mt, testWebP)
	}
	f.Add("image/png", []byte{})
	f.Add("image/png", []byte("\x89PNG\r\n\x1a\n"))
	f.Add("image/webp", []byte("RIFF\x00\x00\x00\x00WEBPVP"))
	f.Add("image/svg+xml", []byte("<svg/>"))
	f.Add("", []byte(nil))
	f.Fuzz(func(t *testing.T, mediaType string, data []byte) {
		err := checkImage(Image{MediaType: mediaType, Data: data})
		ok := slices.Contains(ImageMediaTypes, mediaType) && len(data) > 0 && len(data) <= MaxImageBytes &&
			http.DetectContentType(data) == mediaType
		if (err == nil) != ok {
			t.Fatalf("checkImage(%q, %d bytes %q) = %v, want ok=%v", mediaType, len(data), data[:min(len(data), 16)], err, ok)
		}
		if err != nil && err.Error() == "" {
			t.Fatal("an error without words")
		}
	})
}

// TestScriptedTakesImages: the scripted model takes a request with images,
// hands them to its Reply as they came, and refuses a bad one as a
// provider would.
func TestScriptedTakesImages(t *testing.T) {
	var seen []Image
	m := Scripted{Reply: func(req Request) (Response, error) {
		seen = req.Messages[0].Images
		return Response{Text: "A red dot."}, nil
	}}
	req := Request{Messages: []Message{{Role: RoleUser, Content: "What is this?", Images: []Image{testPNG}}}}
	resp, err := m.Complete(t.Context(), req, nil)
	if err != nil || resp.Text != "A red dot." {
		t.Fatalf("Complete: %+v, %v", resp, err)
	}
	if len(seen) != 1 || !bytes.Equal(seen[0].Data, testPNG.Data) || seen[0].MediaType != "image/png" {
		t.Fatalf("the script saw %+v", seen)
	}
	req.Messages[0].Images[0].MediaType = "image/jpeg"
	if _, err := m.Complete(t.Context(), req, nil); err == nil || !strings.Contains(err.Error(), "messages[0].Images[0]: an image declared image/jpeg") {
		t.Fatalf("a PNG declared JPEG: %v", err)
	}
}
