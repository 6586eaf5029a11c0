package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"
)

// This file derives hostile requests from the OpenAPI documents: for every
// operation, a valid baseline request (path and required query parameters
// filled with the caller's own ownIDs, a body sampled from the request
// schema), then one variation per hostile value of each path parameter,
// each query parameter, each body field at any depth, and of the body as a
// whole. The runner is in hostile_test.go.

// hostileCase is one request to send.
type hostileCase struct {
	op     string // "METHOD /path" as the document writes it
	what   string // what was made hostile, for failure messages
	method string
	// rawPath is the request path exactly as sent (percent-escapes kept).
	rawPath string
	// rawQuery is the query string exactly as sent.
	rawQuery string
	// body is sent when hasBody; contentType "" sends no Content-Type.
	body        []byte
	hasBody     bool
	contentType string
	// chunked hides the body's length (Transfer-Encoding: chunked).
	chunked bool
	// baseline is the unmodified valid request: it must succeed (2xx).
	baseline bool
	// want, when not 0, is the one status the case must get.
	want int
	// authorization, when not "", replaces the Authorization header ("-"
	// sends none). Such cases spend the per-address auth-failure budget,
	// so they run last.
	authorization string
}

// ownIDs are the caller's own resources that baselines refer to.
type ownIDs struct {
	connection, account, manualAccount, category, transaction, rule, webhook uuid.UUID
	// outflow and inflow are two unpaired transactions of two accounts
	// that a POST /v2/transfers may pair; transfer is a detected transfer.
	outflow, inflow, transfer uuid.UUID
}

// operation is one path and method of a document, with what the cases
// need from it.
type operation struct {
	version string // "/v1" or "/v2"
	path    string // as in the document, e.g. /accounts/{accountId}
	method  string
	params  []*openapi3.Parameter
	body    *openapi3.Schema
}

func (o operation) name() string { return o.method + " " + o.version + o.path }

// operations lists every operation of a document, deletes last (so that
// closing the manual account or archiving the rule comes after every
// case that needs them open).
func operations(doc *openapi3.T, version string) []operation {
	var out []operation
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			o := operation{version: version, path: path, method: method}
			for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
				o.params = append(o.params, p.Value)
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				if mt := op.RequestBody.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
					o.body = mt.Schema.Value
				}
			}
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b operation) int {
		if (a.method == "DELETE") != (b.method == "DELETE") {
			if a.method == "DELETE" {
				return 1
			}
			return -1
		}
		return strings.Compare(a.name(), b.name())
	})
	return out
}

// baselineParam is a valid value for a parameter, by name: the caller's
// own ownIDs for id parameters, a wide date range, the schema's first
// allowed value otherwise.
func baselineParam(o operation, p *openapi3.Parameter, own ownIDs) string {
	switch p.Name {
	case "bankConnectionId", "connectionId":
		return own.connection.String()
	case "bankAccountId", "accountIds":
		return own.account.String()
	case "accountId":
		return own.manualAccount.String()
	case "categoryId":
		return own.category.String()
	case "ruleId":
		return own.rule.String()
	case "webhookId":
		return own.webhook.String()
	case "id":
		if strings.HasPrefix(o.path, "/transactions") {
			return own.transaction.String()
		}
		if strings.HasPrefix(o.path, "/transfers") {
			return own.transfer.String()
		}
		return own.category.String()
	case "startDate":
		return "2020-01-01"
	case "endDate":
		return "2030-12-31"
	}
	v := sample(p.Schema.Value, own)
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// sample is a valid value of a schema: every property of an object (so
// that variations reach the deepest fields), one item of an array, the
// first alternative of a oneOf or anyOf.
func sample(s *openapi3.Schema, own ownIDs) any {
	switch {
	case s.Const != nil:
		return s.Const
	case len(s.Enum) > 0:
		return s.Enum[0]
	case len(s.OneOf) > 0:
		return sample(s.OneOf[0].Value, own)
	case len(s.AnyOf) > 0:
		return sample(s.AnyOf[0].Value, own)
	}
	t := s.Type
	switch {
	case t.Permits("object"):
		obj := map[string]any{}
		for name, prop := range s.Properties {
			obj[name] = sample(prop.Value, own)
		}
		return obj
	case t.Permits("array"):
		return []any{sample(s.Items.Value, own)}
	case t.Permits("integer"):
		if s.Min != nil {
			return int(*s.Min)
		}
		return 1
	case t.Permits("number"):
		return 12.5
	case t.Permits("boolean"):
		return true
	case t.Permits("string"):
		switch {
		case s.Format == "uuid":
			return own.category.String()
		case s.Format == "date":
			return "2026-03-01"
		case s.Pattern == "^[A-Z]{3}$":
			return "USD"
		}
		return "x"
	}
	return nil
}

// baselineBodies overrides the sampled body where the schema cannot say
// what makes a body valid (a rule's condition must suit its field).
func baselineBody(o operation, own ownIDs) any {
	if o.version == "/v2" && strings.HasPrefix(o.path, "/rules") {
		return map[string]any{
			"priority": 5,
			"conditions": []any{
				map[string]any{"field": "Summary", "operator": "contains", "value": "coffee"},
				map[string]any{"field": "Amount", "operator": "between", "value": []any{-10.5, 20}},
			},
			"outcomes": []any{
				map[string]any{"action": "updateTransaction", "field": "Category", "value": map[string]any{"id": own.category.String()}},
			},
		}
	}
	if o.version == "/v2" && o.path == "/transfers" {
		return map[string]any{"outflowTransactionId": own.outflow.String(), "inflowTransactionId": own.inflow.String()}
	}
	if o.version == "/v2" && o.path == "/webhooks" {
		return map[string]any{"url": "https://hooks.example.com/finsync", "events": []any{"sync.completed"}}
	}
	return sample(o.body, own)
}

// hostileQueryValues are raw (already percent-encoded, or deliberately
// not) values for any query parameter.
func hostileQueryValues() []string {
	return []string{
		"", "%00", "a%00b", "%zz", "%", "%e9", "%C3%A9", "%2F..%2F..", strings.Repeat("x", 4096),
		"-1", "0", "1.5", "1e999", "99999999999999999999", "NaN", "true", "null", "%5B%5D",
		"00000000-0000-0000-0000-000000000000", strings.ToUpper(uuid.NewString()), "urn:uuid:" + uuid.NewString(),
		"2026-02-30", "0000-01-01", "9999-12-31", "10000-01-01", "'%20OR%201=1--", "x;y",
	}
}

// hostilePathValues are raw values for a path parameter. "%zz" does not
// decode: net/http itself refuses such a request line (400) before it
// reaches the router.
func hostilePathValues() []string {
	return []string{
		"x", "%00", "a%00b", strings.Repeat("x", 4096), "-1", "0", "1e999",
		"00000000-0000-0000-0000-000000000000", uuid.NewString(), "%7B" + uuid.NewString() + "%7D",
		strings.ReplaceAll(uuid.NewString(), "-", ""), "%2F", "..", "%C3%A9", "%zz",
	}
}

// hostileJSONValues are JSON texts to put in place of any body field.
func hostileJSONValues() []string {
	return []string{
		`"\u0000"`, `"a\u0000b"`, `"` + strings.Repeat("x", 2000) + `"`, `"` + strings.Repeat("é", 201) + `"`,
		`""`, `"   "`, `"\ud800"`, `"é"`, `"not-a-uuid"`, `"00000000-0000-0000-0000-000000000000"`, `"2026-02-30"`,
		`1e15`, `-1e15`, `1000000000000000`, `1e999999999`, `-1e-999999999`, `1.00001`, `-1`, `0`, `1.5`,
		`123456789012345678901234567890`, `"12.5"`, `true`, `null`, `[]`, `{}`, `[null]`, `{"x":1}`,
		strings.Repeat("[", 64) + strings.Repeat("]", 64),
		strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64),
	}
}

// wholeBodies are bodies that are hostile as a whole; base is the
// baseline body's JSON.
func wholeBodies(base []byte) []string {
	trimmed := strings.TrimSuffix(string(base), "}")
	return []string{
		"", "{", "}", "null", "[]", `"x"`, "1", "{}", `{"a":1}{}`, string(base) + " garbage", string(base) + "{}",
		trimmed + `,"bogus":1}`, trimmed + `,"x\u0000":1}`, trimmed + "," + strings.TrimPrefix(string(base), "{"),
		strings.Repeat("[", 100000), strings.Repeat(`{"a":`, 1000) + "1" + strings.Repeat("}", 1000),
		"\xef\xbb\xbf" + string(base), `{"name":"` + "\xff\xfe" + `"}`, "\x00",
	}
}

// pathVariants is the raw path with the named parameter set to value and
// the others to their baselines.
func fillPath(o operation, own ownIDs, hostile string, value string) string {
	path := o.path
	for _, p := range o.params {
		if p.In != "path" {
			continue
		}
		v := url.PathEscape(baselineParam(o, p, own))
		if p.Name == hostile {
			v = value
		}
		path = strings.ReplaceAll(path, "{"+p.Name+"}", v)
	}
	return o.version + path
}

// baselineQuery is the encoded required query parameters, except skip.
func baselineQuery(o operation, own ownIDs, skip string) []string {
	var parts []string
	for _, p := range o.params {
		if p.In == "query" && p.Required && p.Name != skip {
			parts = append(parts, url.QueryEscape(p.Name)+"="+url.QueryEscape(baselineParam(o, p, own)))
		}
	}
	return parts
}

// casesFor builds every case of one operation.
func casesFor(o operation, own ownIDs) []hostileCase {
	base := hostileCase{op: o.name(), method: o.method, rawPath: fillPath(o, own, "", ""),
		rawQuery: strings.Join(baselineQuery(o, own, ""), "&")}
	var baseBody []byte
	if o.body != nil {
		var err error
		if baseBody, err = json.Marshal(baselineBody(o, own)); err != nil {
			panic(fmt.Sprintf("%s: baseline body: %v", o.name(), err))
		}
		base.body, base.hasBody, base.contentType = baseBody, true, "application/json"
	}
	var out []hostileCase
	add := func(what string, edit func(c *hostileCase)) {
		c := base
		c.what = what
		edit(&c)
		out = append(out, c)
	}
	for _, p := range o.params {
		switch p.In {
		case "path":
			for _, v := range hostilePathValues() {
				add("path "+p.Name+"="+short(v), func(c *hostileCase) { c.rawPath = fillPath(o, own, p.Name, v) })
			}
		case "query":
			for _, v := range hostileQueryValues() {
				add("query "+p.Name+"="+short(v), func(c *hostileCase) {
					c.rawQuery = strings.Join(append(baselineQuery(o, own, p.Name), url.QueryEscape(p.Name)+"="+v), "&")
					c.want = undecodable(c.rawQuery)
				})
			}
			add("query "+p.Name+" twice", func(c *hostileCase) {
				v := url.QueryEscape(baselineParam(o, p, own))
				c.rawQuery = strings.Join(append(baselineQuery(o, own, p.Name), p.Name+"="+v, p.Name+"="+v), "&")
			})
		}
	}
	for _, q := range []string{"%zz=1", "a=1;b=2", "%00=%00", strings.Repeat("a=1&", 2000) + "b"} {
		add("query "+short(q), func(c *hostileCase) {
			c.rawQuery = strings.Join(append(baselineQuery(o, own, ""), q), "&")
			// Each of these does not decode or names a parameter no
			// operation accepts: refused everywhere but the health check.
			if o.path != "/health" {
				c.want = http.StatusBadRequest
			}
		})
	}
	if o.body == nil {
		add("unexpected body", func(c *hostileCase) {
			c.body, c.hasBody, c.contentType = []byte(`{"x":"\u0000"}`), true, "application/json"
		})
		return append([]hostileCase{withBaseline(base)}, out...)
	}
	var tree any
	if err := json.Unmarshal(baseBody, &tree); err != nil {
		panic(err)
	}
	for _, path := range fieldPaths(tree, "") {
		for _, v := range hostileJSONValues() {
			add("body "+path+"="+short(v), func(c *hostileCase) { c.body = replaceField(tree, path, json.RawMessage(v)) })
		}
		add("body "+path+" missing", func(c *hostileCase) { c.body = replaceField(tree, path, nil) })
	}
	for _, b := range wholeBodies(baseBody) {
		add("whole body "+short(b), func(c *hostileCase) { c.body = []byte(b) })
	}
	over := append(append([]byte("{"), bytesOf(' ', 1<<20)...), baseBody[1:]...)
	add("body over 1 MiB", func(c *hostileCase) { c.body, c.want = over, http.StatusRequestEntityTooLarge })
	add("body over 1 MiB, chunked", func(c *hostileCase) {
		c.body, c.chunked, c.want = over, true, http.StatusRequestEntityTooLarge
	})
	add("no Content-Type", func(c *hostileCase) { c.contentType = "" })
	add("Content-Type text/plain", func(c *hostileCase) { c.contentType = "text/plain" })
	add("Content-Type utf-16", func(c *hostileCase) { c.contentType = "application/json; charset=utf-16" })
	add("Content-Type malformed", func(c *hostileCase) { c.contentType = "application/json; ===" })
	add("no body", func(c *hostileCase) { c.body, c.hasBody = nil, false })
	return append([]hostileCase{withBaseline(base)}, out...)
}

// requestCases are the variations of an operation's method and
// credentials, from its baseline.
func requestCases(o operation, own ownIDs) []hostileCase {
	base := casesFor(o, own)[0]
	var out []hostileCase
	add := func(what string, edit func(c *hostileCase)) {
		c := base
		c.what, c.baseline = what, false
		edit(&c)
		out = append(out, c)
	}
	add("trailing slash", func(c *hostileCase) { c.rawPath, c.want = c.rawPath+"/", http.StatusNotFound })
	for _, p := range o.params {
		if p.In == "path" {
			add("path "+p.Name+" empty", func(c *hostileCase) {
				c.rawPath, c.want = fillPath(o, own, p.Name, ""), http.StatusNotFound
			})
		}
	}
	for _, m := range []string{"PUT", "OPTIONS", "TRACE", "FOO"} {
		add("method "+m, func(c *hostileCase) { c.method, c.want = m, http.StatusMethodNotAllowed })
	}
	for _, a := range []string{"-", "Bearer", "Bearer ", "Basic Zm9vOmJhcg==", "Bearer fin_" + strings.Repeat("a", 8000),
		"Bearer fin_" + strings.Repeat("é", 40), "Bearer fin_0123456789abcdefghijABCDEFGHIJ0123456789 extra",
		"bearer   fin_0123456789abcdefghijABCDEFGHIJ0123456789"} {
		add("Authorization "+short(a), func(c *hostileCase) { c.authorization = a })
	}
	return out
}

// undecodable is 400 when a query string does not decode (an operation
// that reads its query must refuse it rather than drop a filter), else 0.
func undecodable(rawQuery string) int {
	if _, err := url.ParseQuery(rawQuery); err != nil {
		return http.StatusBadRequest
	}
	return 0
}

func withBaseline(c hostileCase) hostileCase {
	c.what, c.baseline = "baseline", true
	return c
}

// fieldPaths lists the paths of every value inside a decoded JSON tree:
// "name", "liability.aprs.0.aprType" (array items by index).
func fieldPaths(v any, prefix string) []string {
	var out []string
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, join(k))
			out = append(out, fieldPaths(t[k], join(k))...)
		}
	case []any:
		for i, item := range t {
			k := fmt.Sprint(i)
			out = append(out, join(k))
			out = append(out, fieldPaths(item, join(k))...)
		}
	}
	return out
}

// replaceField returns the tree's JSON with the value at path replaced by
// raw (removed when raw is nil). The tree itself is left unchanged.
func replaceField(tree any, path string, raw json.RawMessage) []byte {
	b, err := json.Marshal(edit(tree, strings.Split(path, "."), raw))
	if err != nil {
		panic(fmt.Sprintf("replace %s: %v", path, err))
	}
	return b
}

func edit(v any, path []string, raw json.RawMessage) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, item := range t {
			out[k] = item
		}
		switch {
		case len(path) > 1:
			out[path[0]] = edit(t[path[0]], path[1:], raw)
		case raw == nil:
			delete(out, path[0])
		default:
			out[path[0]] = raw
		}
		return out
	case []any:
		out := slices.Clone(t)
		var i int
		fmt.Sscan(path[0], &i)
		switch {
		case len(path) > 1:
			out[i] = edit(t[i], path[1:], raw)
		case raw == nil:
			out = slices.Delete(out, i, i+1)
		default:
			out[i] = raw
		}
		return out
	}
	return v
}

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// short abbreviates a hostile value for messages.
func short(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s…(%d bytes)", s[:20], len(s))
	}
	return s
}
