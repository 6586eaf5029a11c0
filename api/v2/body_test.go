package v2

import "testing"

// TestParseObjectWording pins what a client reads for each way a body
// object is refused, one fault at a time, at every depth a duplicate was
// refused before: the body's own members, and the liability object's.
func TestParseObjectWording(t *testing.T) {
	allowed := []string{"name", "liability"}
	cases := []struct{ path, in, want string }{
		{"body", `{"name":"x","colour":"red"}`, `body: unknown field "colour"`},
		{"body", `{"name":"x","name":"y"}`, `body: duplicate field "name"`},
		{"body", `{"name":"x","\u006eame":"y"}`, `body: duplicate field "name"`},
		{"body", `{"liability":{"type":"credit","type":"student"}}`, `liability: duplicate field "type"`},
		{"body", `{"liability":{"aprs":[{"aprType":"p","aprType":"q"}]}}`, `liability.aprs[0]: duplicate field "aprType"`},
		{"liability", `{"aprs":[{"aprType":"p","aprType":"q"}]}`, `liability.aprs[0]: duplicate field "aprType"`},
		{"body", `{"name":"x",`, "body: malformed JSON"},
		{"body", `{"name":"x",,}`, "body: malformed JSON"},
		{"body", `[1]`, "body: must be a JSON object"},
		{"liability", `"credit"`, "liability: must be a JSON object"},
		{"body", `{"name":"x"} {}`, "body: unexpected data after the JSON object"},
		{"body", `{"name":"x"} x`, "body: unexpected data after the JSON object"},
	}
	for _, c := range cases {
		_, err := parseObject([]byte(c.in), c.path, allowed...)
		if err == nil || err.Error() != c.want {
			t.Errorf("parseObject(%s, %s) = %v, want %q", c.in, c.path, err, c.want)
		}
	}
	m, err := parseObject([]byte(` {"name":"x","liability":{"minimumPaymentAmount":12345678901234.5678}} `), "body", allowed...)
	if err != nil || string(m["liability"]) != `{"minimumPaymentAmount":12345678901234.5678}` || !m.has("name") {
		t.Fatalf("parseObject = %v, %v", m, err)
	}
}
