package llm_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	pngenc "image/png"

	"github.com/moora-go/moora/automata"
	"github.com/moora-go/moora/automata/llm"
)

// A complete agent in miniature: its state holds a question and, once the
// model has answered, the answer. While the question has no answer the
// state calls for one job, which asks the model, prints the reply's chunks
// as they stream in (where a program would send them to a screen) and hands
// the whole reply to the agent as an input. The chunks never enter the
// state: only the finished answer does.
func Example() {
	type state struct{ Question, Answer string }
	type input struct{ Question, Answer string } // one of the two

	// The offline model: it greets whoever asked, and says which job asked.
	model := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		q := req.Messages[len(req.Messages)-1].Content
		return llm.Response{Text: fmt.Sprintf("You asked %q (job %s).", q, req.IdempotencyKey)}, nil
	}}

	answer := func(s state) map[string]automata.Job[input] {
		if s.Question == "" || s.Answer != "" {
			return nil
		}
		return map[string]automata.Job[input]{
			"answer": func(ctx context.Context, dispatch automata.Dispatch[input]) error {
				resp, err := model.Complete(ctx, llm.Request{
					System:         "You answer questions.",
					Messages:       []llm.Message{{Role: llm.RoleUser, Content: s.Question}},
					IdempotencyKey: automata.JobKey(ctx),
				}, func(chunk string) { fmt.Printf("chunk %q\n", chunk) })
				if err != nil {
					return err // an EffectFailed event
				}
				dispatch(input{Answer: resp.Text})
				return nil
			},
		}
	}

	def := automata.Definition[state, input]{
		Initial: func() state { return state{} },
		Transition: func(s state, in input) state {
			if in.Question != "" {
				return state{Question: in.Question}
			}
			s.Answer = in.Answer
			return s
		},
	}
	m := automata.NewMoore(def, func(s state) state { return s }, automata.WithJobs(answer))
	answered := make(chan string, 1)
	m.Subscribe(func(s state) {
		if s.Answer != "" {
			answered <- s.Answer
		}
	})
	m.Dispatch(input{Question: "why?"})
	fmt.Println("answer:", <-answered)
	m.Close(context.Background())
	// Output:
	// chunk "You"
	// chunk " asked"
	// chunk " \"why?\""
	// chunk " (job"
	// chunk " answer)."
	// answer: You asked "why?" (job answer).
}

// An image in a user message: its bytes and their media type. The scripted
// model hands it to its Reply; a provider sends it in base64, before the
// text. Validate refuses an image that no provider would take, and says
// which.
func ExampleImage() {
	var png bytes.Buffer
	dot := image.NewGray(image.Rect(0, 0, 1, 1))
	if err := pngenc.Encode(&png, dot); err != nil {
		panic(err)
	}
	model := llm.Scripted{Reply: func(req llm.Request) (llm.Response, error) {
		images := req.Messages[0].Images
		return llm.Response{Text: fmt.Sprintf("I see %d image (%s).", len(images), images[0].MediaType)}, nil
	}}
	resp, err := model.Complete(context.Background(), llm.Request{Messages: []llm.Message{{
		Role:    llm.RoleUser,
		Content: "What is this?",
		Images:  []llm.Image{{MediaType: "image/png", Data: png.Bytes()}},
	}}}, nil)
	fmt.Println(resp.Text, err)

	_, err = model.Complete(context.Background(), llm.Request{Messages: []llm.Message{{
		Role:   llm.RoleUser,
		Images: []llm.Image{{MediaType: "image/jpeg", Data: png.Bytes()}},
	}}}, nil)
	fmt.Println(err)
	// Output:
	// I see 1 image (image/png). <nil>
	// scripted model: llm: invalid request: messages[0].Images[0]: an image declared image/jpeg whose bytes are not (they look like image/png)
}
