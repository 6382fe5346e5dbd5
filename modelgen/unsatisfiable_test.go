package modelgen

import "testing"

// TestUnsatisfiableSchemas loads a spec with an observed property of each
// schema and compares the diagnostics with want: the error at the keyword
// that makes the schema unsatisfiable, or none (nor a warning, which
// --strict would make an error) for a schema that a value satisfies.
func TestUnsatisfiableSchemas(t *testing.T) {
	const head = "version: 1\nactors: [user]\nobservations:\n  user:\n    user:\n      x: "
	const tail = "\ninputs:\n  user:\n    poke: {type: object}\n"
	for _, tc := range []struct {
		name, schema, want string
	}{
		// multipleOf
		{"no even integer in [1, 1]", "{type: integer, multipleOf: 2, minimum: 1, maximum: 1}",
			"agent.yaml:6:53: observations.user.user.x.maximum: no integer that is at least 1 and at most 1 is a multiple of 2; widen the range to hold a multiple, or change multipleOf"},
		{"no even number in [1, 1]", "{type: number, minimum: 1, maximum: 1, multipleOf: 2}",
			"agent.yaml:6:49: observations.user.user.x.multipleOf: no number that is at least 1 and at most 1 is a multiple of 2; widen the range to hold a multiple, or change multipleOf"},
		{"an even integer in [1, 2]", "{type: integer, multipleOf: 2, minimum: 1, maximum: 2}", ""},
		{"no multiple of 10 in [1, 9]", "{type: number, multipleOf: 10, minimum: 1, maximum: 9}",
			"agent.yaml:6:53: observations.user.user.x.maximum: no number that is at least 1 and at most 9 is a multiple of 10; widen the range to hold a multiple, or change multipleOf"},
		{"no multiple of 10 in (0, 10)", "{type: integer, multipleOf: 10, exclusiveMinimum: 0, exclusiveMaximum: 10}",
			"agent.yaml:6:63: observations.user.user.x.exclusiveMaximum: no integer that is greater than 0 and less than 10 is a multiple of 10; widen the range to hold a multiple, or change multipleOf"},
		{"a multiple of 10 in (0, 10]", "{type: number, multipleOf: 10, exclusiveMinimum: 0, maximum: 10}", ""},
		{"a multiple of 10 in [-10, 0)", "{type: number, multipleOf: 10, minimum: -10, exclusiveMaximum: 0}", ""},
		{"no multiple of 0.5 in [0.6, 0.9]", "{type: number, multipleOf: 0.5, minimum: 0.6, maximum: 0.9}",
			"agent.yaml:6:56: observations.user.user.x.maximum: no number that is at least 0.6 and at most 0.9 is a multiple of 0.5; widen the range to hold a multiple, or change multipleOf"},
		{"a multiple of 0.1 in [0.25, 0.35]", "{type: number, multipleOf: 0.1, minimum: 0.25, maximum: 0.35}", ""},
		{"no integer multiple of 2.5 in [1, 4]", "{type: integer, multipleOf: 2.5, minimum: 1, maximum: 4}",
			"agent.yaml:6:55: observations.user.user.x.maximum: no integer that is at least 1 and at most 4 is a multiple of 2.5; widen the range to hold a multiple, or change multipleOf"},
		{"an integer multiple of 2.5 in [1, 5]", "{type: integer, multipleOf: 2.5, minimum: 1, maximum: 5}", ""},
		{"an integer multiple of 0.3 in [-3, -3]", "{type: integer, multipleOf: 0.3, minimum: -3, maximum: -3}", ""},
		{"no int64 multiple of 1e19 from 1", "{type: integer, minimum: 1, multipleOf: 1.0e+19}",
			"agent.yaml:6:38: observations.user.user.x.multipleOf: no int64 (the Go type of an integer) that is at least 1 is a multiple of 1e+19; widen the range to hold a multiple, or change multipleOf"},
		{"an int64 multiple of 1e19 from 0", "{type: integer, minimum: 0, multipleOf: 1.0e+19}", ""},
		{"no multiple of 1e308 in [1, 9]", "{type: number, multipleOf: 1.0e+308, minimum: 1, maximum: 9}",
			"agent.yaml:6:59: observations.user.user.x.maximum: no number that is at least 1 and at most 9 is a multiple of 1e+308; widen the range to hold a multiple, or change multipleOf"},
		{"a multiple of 1e-300 in [1, 2]", "{type: number, multipleOf: 1.0e-300, minimum: 1, maximum: 2}", ""},
		{"a multiple of 3 without bounds", "{type: integer, multipleOf: 3}", ""},

		// uniqueItems
		{"3 unique booleans", "{type: array, minItems: 3, uniqueItems: true, items: {type: boolean}}",
			"agent.yaml:6:37: observations.user.user.x.uniqueItems: minItems 3 with uniqueItems needs 3 different items, but items allows only 2 values (true and false): no array satisfies both; lower minItems to at most 2, or remove uniqueItems"},
		{"2 unique booleans", "{type: array, minItems: 2, uniqueItems: true, items: {type: boolean}}", ""},
		{"3 unique booleans, not unique", "{type: array, minItems: 3, uniqueItems: false, items: {type: boolean}}", ""},
		{"3 unique of a two-value enum", "{type: array, minItems: 3, uniqueItems: true, items: {enum: [a, b]}}",
			`agent.yaml:6:37: observations.user.user.x.uniqueItems: minItems 3 with uniqueItems needs 3 different items, but items allows only 2 values ("a" and "b"): no array satisfies both; lower minItems to at most 2, or remove uniqueItems`},
		{"3 unique of a nullable two-value enum", "{type: array, items: {type: [string, \"null\"], enum: [a, b]}, uniqueItems: true, minItems: 3}", ""},
		{"4 unique of a nullable two-value enum", "{type: array, items: {type: [string, \"null\"], enum: [a, b]}, uniqueItems: true, minItems: 4}",
			`agent.yaml:6:90: observations.user.user.x.minItems: minItems 4 with uniqueItems needs 4 different items, but items allows only 3 values ("a", "b" and null): no array satisfies both; lower minItems to at most 3, or remove uniqueItems`},
		{"6 unique even integers in [1, 10]", "{type: array, minItems: 6, uniqueItems: true, items: {type: integer, minimum: 1, maximum: 10, multipleOf: 2}}",
			"agent.yaml:6:37: observations.user.user.x.uniqueItems: minItems 6 with uniqueItems needs 6 different items, but items allows only 5 values (the multiples of 2 from 2 to 10): no array satisfies both; lower minItems to at most 5, or remove uniqueItems"},
		{"5 unique even integers in [1, 10]", "{type: array, minItems: 5, uniqueItems: true, items: {type: integer, minimum: 1, maximum: 10, multipleOf: 2}}", ""},
		{"3 unique integers from -1 to 0", "{type: array, minItems: 3, uniqueItems: true, items: {type: integer, minimum: -1, maximum: 0}}",
			"agent.yaml:6:37: observations.user.user.x.uniqueItems: minItems 3 with uniqueItems needs 3 different items, but items allows only 2 values (-1 and 0): no array satisfies both; lower minItems to at most 2, or remove uniqueItems"},
		{"3 unique integers from 0", "{type: array, minItems: 3, uniqueItems: true, items: {type: integer, minimum: 0}}", ""},
		{"2 unique empty strings", "{type: array, minItems: 2, uniqueItems: true, items: {type: string, maxLength: 0}}",
			`agent.yaml:6:37: observations.user.user.x.uniqueItems: minItems 2 with uniqueItems needs 2 different items, but items allows only 1 value (""): no array satisfies both; lower minItems to at most 1, or remove uniqueItems`},
		{"3 unique strings a pattern allows 2 of", "{type: array, minItems: 3, uniqueItems: true, items: {type: string, pattern: '^(yes|no)$'}}",
			`agent.yaml:6:37: observations.user.user.x.uniqueItems: minItems 3 with uniqueItems needs 3 different items, but items allows only 2 values ("no" and "yes"): no array satisfies both; lower minItems to at most 2, or remove uniqueItems`},
		{"3 unique strings an unanchored pattern allows", "{type: array, minItems: 3, uniqueItems: true, items: {type: string, pattern: '(yes|no)'}}", ""},

		// pattern
		{"pattern ^a$ with maxLength 0", "{type: string, pattern: '^a$', maxLength: 0}",
			`agent.yaml:6:41: observations.user.user.x.maxLength: pattern "^a$" matches only strings of at least 1 character, more than maxLength 0: no string satisfies both; raise maxLength, or fix the pattern`},
		{"pattern a with maxLength 0", "{type: string, pattern: 'a', maxLength: 0}",
			`agent.yaml:6:39: observations.user.user.x.maxLength: pattern "a" matches only strings of at least 1 character, more than maxLength 0: no string satisfies both; raise maxLength, or fix the pattern`},
		{"pattern a? with maxLength 0", "{type: string, pattern: 'a?', maxLength: 0}", ""},
		{"pattern ^a?$ with minLength 3", "{type: string, minLength: 3, pattern: '^a?$'}",
			`agent.yaml:6:39: observations.user.user.x.pattern: pattern "^a?$" matches only strings of at most 1 character, fewer than minLength 3: no string satisfies both; lower minLength, or fix the pattern`},
		{"pattern ^a?$ with maxLength 1", "{type: string, pattern: '^a?$', maxLength: 1}", ""},
		{"pattern a with minLength 3", "{type: string, pattern: 'a', minLength: 3}", ""},
		{"pattern (?m)^a$ with minLength 3", "{type: string, pattern: '(?m)^a$', minLength: 3}", ""},
		{"pattern matching nothing", `{type: string, pattern: '[^\s\S]'}`,
			`agent.yaml:6:25: observations.user.user.x.pattern: pattern "[^\\s\\S]" matches no string: no string satisfies it; fix the pattern`},
		{"pattern matching \\S only", `{type: string, pattern: '[^\s]'}`, ""},
		{"format date with pattern ^x$", "{type: string, format: date, pattern: '^x$'}",
			`agent.yaml:6:39: observations.user.user.x.pattern: pattern "^x$" matches only "x", which is not a valid date: no string satisfies both; fix the pattern, or remove the format`},
		{"format date with pattern ^(x|y)$", "{type: string, pattern: '^(x|y)$', format: date}",
			`agent.yaml:6:45: observations.user.user.x.format: pattern "^(x|y)$" matches only 2 strings, none of which is a valid date: no string satisfies both; fix the pattern, or remove the format`},
		{"format date with a pattern of 7 characters", `{type: string, format: date, pattern: '^\d{4}-\d\d$'}`,
			`agent.yaml:6:39: observations.user.user.x.pattern: a date is 10 characters long, but pattern "^\\d{4}-\\d\\d$" matches only strings of at most 7 characters: no string satisfies both; fix the pattern, or remove the format`},
		{"format date with pattern x", "{type: string, format: date, pattern: 'x'}", ""},
		{"format date with pattern ^2024-01-0[1-3]$", "{type: string, format: date, pattern: '^2024-01-0[1-3]$'}", ""},
		{"format date with a pattern of 10 digits and dashes", `{type: string, format: date, pattern: '^\d{4}-\d\d-\d\d$'}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := loadBytes("agent.yaml", []byte(head+tc.schema+tail))
			got := ""
			if err != nil {
				got = err.Error()
			} else if len(m.Warnings) > 0 {
				got = m.Warnings.Error()
			}
			if got != tc.want {
				t.Errorf("schema %s\ngot:  %s\nwant: %s", tc.schema, got, tc.want)
			}
		})
	}
}
