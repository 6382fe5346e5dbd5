package toolkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/moora-go/moora/automata/llm"
	"github.com/moora-go/moora/automata/toolkit"
)

// WeatherArgs are the weather tool's arguments: the model is shown their
// schema, and its arguments are checked against it before the tool runs.
type WeatherArgs struct {
	City  string `json:"city" jsonschema_description:"The city, such as Paris."`
	Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
}

// A model asks for two tools at once, one of them with arguments it got
// wrong: the kit runs both calls in parallel, and the model is told each
// result, the error included, so that it can correct itself.
func Example() {
	weather := toolkit.Func("weather", "Tells the weather in a city.",
		func(ctx context.Context, a WeatherArgs) (string, error) {
			if a.Units == "imperial" {
				return a.City + ": 64°F, sunny", nil
			}
			return a.City + ": 18°C, sunny", nil
		})
	clock := toolkit.Func("clock", "Tells the time in UTC.",
		func(context.Context, struct{}) (string, error) {
			return time.Date(2026, 11, 25, 9, 30, 0, 0, time.UTC).Format(time.Kitchen), nil
		})
	kit, err := toolkit.New(toolkit.Config{},
		weather.With(toolkit.Policy{Timeout: 5 * time.Second, Retries: 2}),
		clock)
	if err != nil {
		panic(err)
	}
	for _, t := range kit.LLMTools() {
		fmt.Printf("%s: %s\n", t.Name, t.Parameters)
	}

	// What a model's reply asked for (llm.Response.ToolCalls).
	calls := []llm.ToolCall{
		{ID: "1", Name: "weather", Arguments: json.RawMessage(`{"city": "Paris", "units": "kelvin"}`)},
		{ID: "2", Name: "clock", Arguments: json.RawMessage(`{}`)},
	}
	for _, r := range kit.RunAll(context.Background(), toolkit.Calls("job-1", calls)) {
		fmt.Printf("%s %s: %s\n", r.CallID, r.Name, strings.ReplaceAll(r.Content(), "\n", " "))
	}
	// Output:
	// weather: {"properties":{"city":{"type":"string","description":"The city, such as Paris."},"units":{"type":"string","enum":["metric","imperial"]}},"additionalProperties":false,"type":"object","required":["city"]}
	// clock: {"properties":{},"additionalProperties":false,"type":"object"}
	// 1 weather: error: invalid arguments: the arguments of weather do not match its schema: /units: value must be one of "metric", "imperial"
	// 2 clock: 9:30AM
}

// A kit of an in-process tool and a remote one: the search tool's
// arguments are POSTed to its URL (here a server of the example's own),
// under the same guards, with the call's idempotency key as a header.
func ExampleHTTP() {
	type WeatherArgs struct {
		City  string `json:"city" jsonschema_description:"The city, such as Paris."`
		Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
	}
	getWeather := func(ctx context.Context, a WeatherArgs) (string, error) {
		return a.City + ": 18°C, sunny", nil
	}
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args struct{ Query string }
		json.NewDecoder(r.Body).Decode(&args)
		fmt.Fprintf(w, "2 pages mention %q (key %s)", args.Query, r.Header.Get("Idempotency-Key"))
	}))
	defer docs.Close()
	searchURL := docs.URL + "/query"
	searchSchema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)

	weather := toolkit.Func("weather", "Tells the weather in a city.", getWeather)
	search := toolkit.HTTP("search", "Searches the docs.", searchSchema, searchURL)
	kit, err := toolkit.New(toolkit.Config{}, weather.With(toolkit.Policy{Timeout: 5 * time.Second, Retries: 2}), search)
	if err != nil {
		panic(err)
	}
	for _, r := range kit.RunAll(context.Background(), []toolkit.Call{
		{ID: "1", Name: "weather", Arguments: json.RawMessage(`{"city": "Paris"}`), Key: "job-7/1"},
		{ID: "2", Name: "search", Arguments: json.RawMessage(`{"query": "breakers"}`), Key: "job-7/2"},
		{ID: "3", Name: "search", Arguments: json.RawMessage(`{"q": "breakers"}`), Key: "job-7/3"},
	}) {
		fmt.Printf("%s %s: %s\n", r.CallID, r.Name, r.Content())
	}
	// Output:
	// 1 weather: Paris: 18°C, sunny
	// 2 search: 2 pages mention "breakers" (key job-7/2)
	// 3 search: error: invalid arguments: the arguments of search do not match its schema: /: missing properties: 'query'
}
