package provider

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/moora-go/moora/automata/llm"
)

// ImageLimits are what a vendor's API takes of a request's images on top
// of what llm.Request.Validate checks: a provider refuses the rest before
// it sends anything, rather than have the server refuse it, or drop it.
type ImageLimits struct {
	// API names the vendor's API in errors, such as "Anthropic's Messages
	// API".
	API string
	// NoToolResults says that a tool's result cannot carry images.
	NoToolResults bool
	// MediaTypes are the media types the API takes, of
	// llm.ImageMediaTypes (nil for all of them).
	MediaTypes []string
	// NoAnimatedGIFs says that a GIF of more than one frame is refused.
	NoAnimatedGIFs bool
	// MaxEncodedBytes bounds the base64 of one image (0 for no bound
	// beyond llm.MaxImageBytes).
	MaxEncodedBytes int64
	// MaxTotalBytes bounds the images of one request put together: their
	// base64 if TotalEncoded (what the request's body carries, where the
	// API bounds the body), else their bytes (0 for no bound).
	MaxTotalBytes int64
	TotalEncoded  bool
}

// Check reports the first image of req that the API does not take, with
// where it is (messages[i].Images[j]) and why, or nil.
func (l ImageLimits) Check(req llm.Request) error {
	var total int64
	for i, m := range req.Messages {
		if m.Role == llm.RoleTool && l.NoToolResults && len(m.Images) > 0 {
			return fmt.Errorf("messages[%d]: a tool's result with images, which %s does not take (its tool messages are text only): send them in a user message after the results", i, l.API)
		}
		for j, im := range m.Images {
			if l.MediaTypes != nil && !slices.Contains(l.MediaTypes, im.MediaType) {
				return fmt.Errorf("messages[%d].Images[%d]: an %s image, which %s does not take (it takes %s): convert it",
					i, j, im.MediaType, l.API, strings.Join(l.MediaTypes, ", "))
			}
			if l.NoAnimatedGIFs && im.MediaType == "image/gif" {
				if n := GIFFrames(im.Data); n > 1 {
					return fmt.Errorf("messages[%d].Images[%d]: an animated GIF (%d frames), which %s does not take: send one frame", i, j, n, l.API)
				}
			}
			encoded := int64(base64.StdEncoding.EncodedLen(len(im.Data)))
			if l.MaxEncodedBytes > 0 && encoded > l.MaxEncodedBytes {
				return fmt.Errorf("messages[%d].Images[%d]: an image of %d bytes, %d in base64, past the %d bytes of base64 an image that %s takes",
					i, j, len(im.Data), encoded, l.MaxEncodedBytes, l.API)
			}
			if l.TotalEncoded {
				total += encoded
			} else {
				total += int64(len(im.Data))
			}
			if l.MaxTotalBytes > 0 && total > l.MaxTotalBytes {
				what := "bytes"
				if l.TotalEncoded {
					what = "bytes of base64"
				}
				return fmt.Errorf("messages[%d].Images[%d]: the request's images reach %d %s, past the %d that %s takes in one request",
					i, j, total, what, l.MaxTotalBytes, l.API)
			}
		}
	}
	return nil
}
