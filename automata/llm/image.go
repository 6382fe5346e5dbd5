package llm

import (
	"fmt"
	"net/http"
	"slices"
)

// Image is an image in a message: its bytes, whole, and their media type.
// A user message may carry images, and so may a tool's result (a
// screenshot a tool took); an assistant message may not. Providers send
// the bytes as the vendor's API takes them (base64, in the request's JSON).
type Image struct {
	// MediaType is one of ImageMediaTypes: image/png, image/jpeg,
	// image/gif or image/webp, which must be what the bytes are (Validate
	// sniffs them, as http.DetectContentType does).
	MediaType string
	// Data is the image's bytes, as its file holds them: 1 to MaxImageBytes
	// of them.
	Data []byte
}

// ImageMediaTypes are the media types an Image may have: the ones the
// OpenAI and Anthropic APIs take. The Gemini API takes no GIF, and OpenAI's
// no animated GIF: those providers refuse them.
var ImageMediaTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// The bounds Validate puts on a request's images, within what the vendors
// document. Anthropic's Messages API takes at most 100 images in a request
// and 5 MiB of base64 an image (3.75 MiB of bytes); OpenAI's chat
// completions API 500 images, 20 MB an image and 50 MB of images in a
// request; the Gemini API 20 MB of inline data in a request. A provider
// refuses, before it sends anything, what its API would refuse past these
// bounds: see each provider's documentation.
const (
	// MaxImageBytes bounds the bytes of one image: 5 MiB.
	MaxImageBytes = 5 << 20
	// MaxImages bounds the number of images in one request, all its
	// messages put together: 20.
	MaxImages = 20
)

// checkImage reports what is wrong with im, or nil: a media type that is
// not one of ImageMediaTypes, no data, more than MaxImageBytes, or bytes
// that are not of the media type declared.
func checkImage(im Image) error {
	if !slices.Contains(ImageMediaTypes, im.MediaType) {
		return fmt.Errorf("media type %q is not one of image/png, image/jpeg, image/gif, image/webp", im.MediaType)
	}
	if len(im.Data) == 0 {
		return fmt.Errorf("an %s image with no data", im.MediaType)
	}
	if len(im.Data) > MaxImageBytes {
		return fmt.Errorf("an %s image of %d bytes, past MaxImageBytes (%d)", im.MediaType, len(im.Data), MaxImageBytes)
	}
	if sniffed := http.DetectContentType(im.Data); sniffed != im.MediaType {
		return fmt.Errorf("an image declared %s whose bytes are not (they look like %s)", im.MediaType, sniffed)
	}
	return nil
}
