package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/toolkit"
	"github.com/moora-go/moora/examples/internal/calc"
	"github.com/moora-go/moora/examples/internal/otelenv"
)

// Tools are the tools of the offline demo: real ones, which need no
// network. clock tells the time; each call takes delay before it runs
// (-tool-delay, to watch one run), unless its context ends first.
func Tools(clock func() time.Time, delay time.Duration) (*toolkit.Kit, error) {
	return tracedTools(otelenv.Providers{}, clock, delay)
}

// tracedTools are Tools, whose calls p traces and measures.
func tracedTools(p otelenv.Providers, clock func() time.Time, delay time.Duration) (*toolkit.Kit, error) {
	return toolkit.New(toolkit.Config{TracerProvider: p.Tracer, MeterProvider: p.Meter},
		toolkit.Func("word_count", "Counts the words of a text: the runs of characters between white space.", slowly(delay, wordCount)),
		toolkit.Func("calculator", "Evaluates an arithmetic expression of numbers, + - * / and parentheses, exactly.", slowly(delay, calculate)),
		toolkit.Func("clock", "Tells the current date and time, in UTC.", slowly(delay, func(context.Context, struct{}) (string, error) {
			return clock().UTC().Format(time.RFC1123), nil
		})),
	)
}

// wordCountArgs are word_count's arguments.
type wordCountArgs struct {
	Text string `json:"text" jsonschema_description:"The text whose words to count."`
}

// wordCount counts the words of a text.
func wordCount(_ context.Context, a wordCountArgs) (string, error) {
	return strconv.Itoa(len(strings.Fields(a.Text))), nil
}

// calculatorArgs are calculator's arguments.
type calculatorArgs struct {
	Expression string `json:"expression" jsonschema_description:"The expression, such as (2 + 3) * 4.5."`
}

// calculate evaluates an arithmetic expression: numbers, + - * /, and
// parentheses, exactly (as Go evaluates constant expressions), so that 1/3*3
// is 1. An expression it cannot evaluate is the arguments' fault
// (toolkit.ErrInvalid): not tried again, and no failure of the tool for its
// circuit breaker.
func calculate(_ context.Context, a calculatorArgs) (string, error) {
	v, err := calc.Calculate(a.Expression)
	if err != nil {
		return "", fmt.Errorf("%w: %w", toolkit.ErrInvalid, err)
	}
	return v, nil
}

// slowly makes run take delay before it runs, unless its context ends
// first.
func slowly[A any](delay time.Duration, run func(context.Context, A) (string, error)) func(context.Context, A) (string, error) {
	if delay <= 0 {
		return run
	}
	return func(ctx context.Context, args A) (string, error) {
		select {
		case <-time.After(delay):
			return run(ctx, args)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}
