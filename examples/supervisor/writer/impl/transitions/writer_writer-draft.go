package transitions

import "github.com/moora-go/moora/examples/supervisor/writer/decl"

// WriterDraft keeps the model's text; the first is final.
func WriterDraft(state decl.StateOfWriter, input decl.WriterDraft) decl.StateOfWriter {
	if state.Text == "" {
		state.Text = input.Text
	}
	return state
}
