package gemini

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/moora-go/moora/automata/llm"
)

// callBytes is what each tool call of a reply counts on top of its bytes,
// as MaxResponseBytes counts them: the memory of its place in the reply and
// in the response, and a margin. It bounds the number of calls an endless
// stream of empty ones can make.
const callBytes = 1 << 10

// answer puts a stream's chunks together, as the Gemini API documents
// them: each chunk a GenerateContentResponse whose first candidate has the
// next parts of the reply (text, or whole function calls), the last one a
// finishReason, and the usage so far in usageMetadata; or, for a prompt
// that was blocked, a promptFeedback with a blockReason and no candidate.
// Nothing marks the end of the stream but the finishReason.
//
// Between chunks: chunks counts them; text holds every text part, in
// order, which is what went to onChunk (thoughts, which this provider does
// not ask for, are left out); calls holds the function calls, in order,
// with their IDs; finish is the finishReason once it came, blocked the
// blockReason; usage the latest counts (each chunk's are totals so far);
// kept counts what the reply keeps, as MaxResponseBytes (limit) bounds,
// and no text past limit goes to onChunk.
type answer struct {
	chunks      int
	text        strings.Builder
	calls       []llm.ToolCall
	finish      genai.FinishReason
	blocked     genai.BlockedReason
	usage       genai.GenerateContentResponseUsageMetadata
	responseID  string
	digest      [sha256.Size]byte // of the request, for the calls' IDs
	kept, limit int64             // limit: MaxResponseBytes
}

// add takes the next chunk of the stream, and hands the text it brings to
// onChunk. It returns what is wrong with the chunk, or "".
func (r *answer) add(ch *genai.GenerateContentResponse, onChunk func(string)) string {
	r.chunks++
	if ch == nil {
		return ""
	}
	if r.responseID == "" && ch.ResponseID != "" {
		r.responseID = ch.ResponseID
		r.kept += int64(len(ch.ResponseID))
	}
	if ch.UsageMetadata != nil {
		r.usage = *ch.UsageMetadata
		r.usage.PromptTokensDetails, r.usage.CandidatesTokensDetails, r.usage.CacheTokensDetails, r.usage.ToolUsePromptTokensDetails = nil, nil, nil, nil
	}
	if pf := ch.PromptFeedback; pf != nil && pf.BlockReason != "" && pf.BlockReason != genai.BlockedReasonUnspecified {
		r.blocked = pf.BlockReason
	}
	if len(ch.Candidates) == 0 || ch.Candidates[0] == nil {
		return ""
	}
	cand := ch.Candidates[0] // the provider asks for one
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			if p == nil {
				continue
			}
			if r.finish != "" && (p.Text != "" || p.FunctionCall != nil) {
				return fmt.Sprintf("content after the finish reason %s", oneLine(string(r.finish)))
			}
			switch {
			case p.Thought:
				// A thought summary, which only includeThoughts asks for:
				// not the reply.
			case p.FunctionCall != nil:
				fc := p.FunctionCall
				if fc.Name == "" {
					return fmt.Sprintf("a functionCall part without a name (call %d)", len(r.calls))
				}
				a := []byte("{}")
				if len(fc.Args) > 0 {
					var err error
					if a, err = json.Marshal(fc.Args); err != nil {
						return fmt.Sprintf("the arguments of call %d (%s): %v", len(r.calls), oneLine(fc.Name), err)
					}
				}
				id := callID(fc.ID, r.digest, r.responseID, len(r.calls), fc.Name, a, p.ThoughtSignature)
				r.calls = append(r.calls, llm.ToolCall{ID: id, Name: fc.Name, Arguments: a})
				r.kept += callBytes + int64(len(id)+len(fc.Name)+len(a))
			case p.Text != "":
				r.addText(p.Text, onChunk)
			}
			// Other parts (inline data, code execution) are of features
			// this provider does not ask for: they are left out.
		}
	}
	if cand.FinishReason != "" && cand.FinishReason != genai.FinishReasonUnspecified {
		r.finish = cand.FinishReason
	}
	return ""
}

// addText adds t to the text, and hands it to onChunk unless it takes
// the reply past its limit, which the caller checks after add.
func (r *answer) addText(t string, onChunk func(string)) {
	r.kept += int64(len(t))
	if r.kept > r.limit {
		return
	}
	r.text.WriteString(t)
	if onChunk != nil {
		onChunk(t)
	}
}

// unfinished says how a stream that ended is not a whole reply, or "".
func (r *answer) unfinished() string {
	switch {
	case r.blocked != "":
		return ""
	case r.chunks == 0:
		return "the stream ended before the model began (no chunk)"
	case r.finish == "" && len(r.calls) > 0:
		c := r.calls[len(r.calls)-1]
		id, _, _ := strings.Cut(c.ID, sigSeparator)
		return fmt.Sprintf("the stream ended before the model finished (no finishReason), after tool call %s (%s)", oneLine(id), oneLine(c.Name))
	case r.finish == "":
		return "the stream ended before the model finished (no finishReason)"
	}
	return ""
}

// response is the whole reply.
func (r *answer) response() llm.Response {
	u := r.usage
	resp := llm.Response{
		Text:      r.text.String(),
		ToolCalls: r.calls,
		Usage: llm.Usage{
			// promptTokenCount counts the cached tokens too; the thoughts
			// are output, paid as such.
			InputTokens:          int64(u.PromptTokenCount) + int64(u.ToolUsePromptTokenCount),
			OutputTokens:         int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
			CacheReadInputTokens: int64(u.CachedContentTokenCount),
		},
	}
	if r.blocked != "" {
		resp.FinishReason = llm.FinishContentFilter
	} else {
		resp.FinishReason = finishReason(r.finish, len(r.calls) > 0)
	}
	return resp
}

// finishReason maps the API's finish reasons to llm's: STOP is
// FinishToolCalls after function calls (the API says STOP then too), else
// FinishStop; MAX_TOKENS FinishLength; SAFETY, RECITATION, BLOCKLIST,
// PROHIBITED_CONTENT, SPII and their IMAGE_ kin FinishContentFilter (the
// API's filters withheld the reply); others (MALFORMED_FUNCTION_CALL,
// LANGUAGE, OTHER, …) pass as they come.
func finishReason(f genai.FinishReason, calls bool) llm.FinishReason {
	switch f {
	case genai.FinishReasonStop:
		if calls {
			return llm.FinishToolCalls
		}
		return llm.FinishStop
	case genai.FinishReasonMaxTokens:
		return llm.FinishLength
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist, genai.FinishReasonProhibitedContent,
		genai.FinishReasonSPII, genai.FinishReasonImageSafety, genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return llm.FinishContentFilter
	}
	return llm.FinishReason(f)
}
