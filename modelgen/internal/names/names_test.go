package names

import (
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
			if got := Words(tc.in); !slices.Equal(got, tc.words) {
				t.Errorf("words = %q, want %q", got, tc.words)
			}
			if got := PascalCase(tc.in); got != tc.pascal {
				t.Errorf("pascalCase = %q, want %q", got, tc.pascal)
			}
			if got := FieldName(tc.in); got != tc.field {
				t.Errorf("fieldName = %q, want %q", got, tc.field)
			}
			if got := LowerCamel(tc.in); got != tc.camel {
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
		if got := Suggest(tc.word, candidates); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}
