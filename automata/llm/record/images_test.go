package record_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/llm/internal/hostiletest"
	"github.com/moora-go/moora/automata/llm/record"
)

// TestImagesRecordedByDigest: a call with images is recorded with each
// image's media type, size and SHA-256, not its bytes; a Player plays it
// back for the same images, and refuses other bytes, or another type,
// saying that the message's images differ.
func TestImagesRecordedByDigest(t *testing.T) {
	shot := hostiletest.PNG(64, 32)
	ask := func(im ...llm.Image) llm.Request {
		req := conversation("look/1")
		req.Messages[0].Images = im
		return req
	}
	dir := t.TempDir()
	m := &model{}
	want, err := record.New(m, dir).Complete(context.Background(), ask(shot), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "look%2F1.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(shot.Data)
	digest := fmt.Sprintf(`"images": [
          {
            "mediaType": "image/png",
            "bytes": %d,
            "sha256": %q
          }
        ]`, len(shot.Data), hex.EncodeToString(sum[:]))
	if !strings.Contains(string(data), digest) {
		t.Fatalf("the file has not the image's digest %s:\n%s", digest, data)
	}
	if bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString(shot.Data)[:40])) {
		t.Fatalf("the file holds the image's bytes:\n%s", data)
	}

	p := record.Player{Dir: dir}
	got, err := p.Complete(context.Background(), ask(llm.Image{MediaType: "image/png", Data: bytes.Clone(shot.Data)}), nil)
	if err != nil || got.Text != want.Text || m.calls != 1 {
		t.Fatalf("played %+v, %v (the model called %d times), want %+v", got, err, m.calls, want)
	}
	other := hostiletest.PNG(64, 33)
	for name, req := range map[string]llm.Request{
		"other bytes":    ask(other),
		"one image more": ask(shot, shot),
		"no image":       ask(),
		"another type":   ask(llm.Image{MediaType: "image/gif", Data: []byte("GIF89a" + string(shot.Data[6:]))}),
	} {
		if _, err := p.Complete(context.Background(), req, nil); err == nil || !strings.Contains(err.Error(), "(message 0's images)") {
			t.Errorf("%s: %v, want the request refused for message 0's images", name, err)
		}
	}

	// Decode gives the images' media types, without their bytes.
	call, err := record.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if im := call.Request.Messages[0].Images; len(im) != 1 || im[0].MediaType != "image/png" || im[0].Data != nil {
		t.Errorf("decoded images %+v", im)
	}
}
