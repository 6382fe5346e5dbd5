package modelgen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func TestNames(t *testing.T) {
	tests := []struct {
		in                   string
		words                []string
		pascal, field, camel string
	}{
		{"user", []string{"user"}, "User", "User", "user"},
		{"llm", []string{"llm"}, "Llm", "Llm", "llm"},
		{"task-manager", []string{"task", "manager"}, "TaskManager", "TaskManager", "taskManager"},
		{"id", []string{"id"}, "Id", "ID", "id"},
		{"userId", []string{"user", "Id"}, "UserId", "UserID", "userId"},
		{"user_id", []string{"user", "id"}, "UserId", "UserID", "userId"},
		{"apiURL", []string{"api", "URL"}, "ApiUrl", "APIURL", "apiUrl"},
		{"HTTPServer", []string{"HTTP", "Server"}, "HttpServer", "HTTPServer", "httpServer"},
		{"IN_PROGRESS", []string{"IN", "PROGRESS"}, "InProgress", "InProgress", "inProgress"},
		{"in-progress", []string{"in", "progress"}, "InProgress", "InProgress", "inProgress"},
		{"v2Items", []string{"v2", "Items"}, "V2Items", "V2Items", "v2Items"},
		{"assiMessages", []string{"assi", "Messages"}, "AssiMessages", "AssiMessages", "assiMessages"},
		{"a b.c", []string{"a", "b", "c"}, "ABC", "ABC", "aBC"},
		{"+", nil, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := words(tc.in); !slices.Equal(got, tc.words) {
				t.Errorf("words = %q, want %q", got, tc.words)
			}
			if got := pascalCase(tc.in); got != tc.pascal {
				t.Errorf("pascalCase = %q, want %q", got, tc.pascal)
			}
			if got := fieldName(tc.in); got != tc.field {
				t.Errorf("fieldName = %q, want %q", got, tc.field)
			}
			if got := lowerCamel(tc.in); got != tc.camel {
				t.Errorf("lowerCamel = %q, want %q", got, tc.camel)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	candidates := []string{"actors", "observations", "inputs", "version", "package", "$defs"}
	tests := []struct{ word, want string }{
		{"obsevations", "observations"},
		{"actor", "actors"},
		{"Inputs", "inputs"},
		{"verison", "version"},
		{"defs", "$defs"},
		{"extra", ""},
		{"x", ""},
	}
	for _, tc := range tests {
		if got := suggest(tc.word, candidates); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

// TestDecodeSpecMatchesJSON checks that decoding the parsed document
// directly gives what encoding/json gives with the spec types' own
// UnmarshalJSON methods.
func TestDecodeSpecMatchesJSON(t *testing.T) {
	specs, err := filepath.Glob(filepath.Join("testdata", "*", "agent.*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range specs {
		t.Run(p, func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			root, err := parseSpec(p, data)
			if err != nil {
				t.Fatal(err)
			}
			direct, err := decodeSpec(root)
			if err != nil {
				t.Fatal(err)
			}
			var viaJSON Spec
			if err := json.Unmarshal(root.appendJSON(nil), &viaJSON); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(direct, &viaJSON) {
				a, _ := json.Marshal(direct)
				b, _ := json.Marshal(&viaJSON)
				t.Errorf("decodeSpec and json.Unmarshal differ\n%s\n%s", a, b)
			}
		})
	}
}

func TestJSONInteger(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "-12": true, "9223372036854775807": true,
		"": false, "-": false, "01": false, "-01": false, "+1": false, "1_000": false,
		"0x1F": false, "1e3": false, "9223372036854775808": false,
	} {
		if got := jsonInteger(s); got != want {
			t.Errorf("jsonInteger(%q) = %v, want %v", s, got, want)
		}
	}
}
