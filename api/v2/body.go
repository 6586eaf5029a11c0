package v2

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"golang.org/x/text/currency"

	"github.com/finsync/finsync/api/params"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/strictjson"
)

// readBody returns the raw request body after checking its Content-Type,
// its size (over the limit: errTooLarge, a 413) and every string and
// number in it (params.CheckJSON); other failures are 400s.
func readBody(c *gin.Context) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, badf("body: Content-Type must be application/json")
	}
	if c.Request.Body == nil {
		return nil, badf("body: a JSON object is required")
	}
	raw, err := io.ReadAll(c.Request.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, errTooLarge
	case err != nil:
		return nil, fmt.Errorf("read request body: %w", err)
	}
	if err := params.CheckJSON(raw, "body"); err != nil {
		return nil, err
	}
	return raw, nil
}

// errTooLarge answers 413 PAYLOAD_TOO_LARGE: the body is over the limit
// the router sets (api.MaxBodyBytes, 1 MiB).
var errTooLarge = errors.New("body: larger than 1 MiB")

// members is a JSON object's members, raw, by name.
type members map[string]json.RawMessage

// readObject reads the body as one JSON object whose keys are all among
// allowed, refusing malformed JSON, duplicate keys, trailing data and
// unknown fields.
func readObject(c *gin.Context, allowed ...string) (members, error) {
	raw, err := readBody(c)
	if err != nil {
		return nil, err
	}
	return parseObject(raw, "body", allowed...)
}

// parseObject parses raw as one JSON object (see readObject); path prefixes
// the messages. Member values keep their exact text (numbers included).
func parseObject(raw []byte, path string, allowed ...string) (members, error) {
	list, err := strictjson.Members(raw)
	if err != nil {
		return nil, objectError(path, err)
	}
	m := make(members, len(list))
	for _, mem := range list {
		if !contains(allowed, mem.Name) {
			return nil, badf("%s: unknown field %q", path, mem.Name)
		}
		m[mem.Name] = json.RawMessage(mem.Value)
	}
	return m, nil
}

// objectError words strictjson's refusal of the object at path for a
// client: not an object, a duplicate (named where it is, "liability" for
// one inside the liability object), data after the object, else malformed
// JSON.
func objectError(path string, err error) error {
	var dup *strictjson.DuplicateError
	switch {
	case errors.Is(err, strictjson.ErrNotObject):
		return badf("%s: must be a JSON object", path)
	case errors.Is(err, strictjson.ErrTrailingData):
		return badf("%s: unexpected data after the JSON object", path)
	case errors.As(err, &dup) && dup.Path() == "":
		return badf("%s: duplicate field %q", path, dup.Name)
	case errors.As(err, &dup) && path == "body":
		return badf("%s: duplicate field %q", dup.Path(), dup.Name)
	case errors.As(err, &dup):
		return badf("%s.%s: duplicate field %q", path, dup.Path(), dup.Name)
	}
	return badf("%s: malformed JSON", path)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// has reports whether the member is present.
func (m members) has(name string) bool {
	_, ok := m[name]
	return ok
}

// isNull reports whether the member is present and null.
func (m members) isNull(name string) bool {
	v, ok := m[name]
	return ok && string(bytes.TrimSpace(v)) == "null"
}

// str decodes a string member; null is refused unless nullable, and yields nil.
func (m members) str(name string, nullable bool) (*string, error) {
	if m.isNull(name) {
		if !nullable {
			return nil, badf("%s: must be a string", name)
		}
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(m[name], &s); err != nil {
		return nil, badf("%s: must be a string", name)
	}
	return &s, nil
}

// nonEmpty decodes a required, non-blank string member.
func (m members) nonEmpty(name string) (string, error) {
	s, err := m.str(name, false)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(*s) == "" {
		return "", badf("%s: must not be empty", name)
	}
	return *s, nil
}

// name decodes a required, non-blank string member of at most
// params.MaxNameLength characters.
func (m members) name(field string) (string, error) {
	s, err := m.nonEmpty(field)
	if err != nil {
		return "", err
	}
	return s, params.Text(field, s, params.MaxNameLength)
}

// label decodes a string member of at most params.MaxNameLength
// characters; null is refused unless nullable, and yields nil.
func (m members) label(field string, nullable bool) (*string, error) {
	s, err := m.str(field, nullable)
	if err != nil || s == nil {
		return s, err
	}
	return s, params.Text(field, *s, params.MaxNameLength)
}

// money decodes a number member (null yields nil); strings are refused.
func (m members) money(name string) (*domain.Money, error) {
	if m.isNull(name) {
		return nil, nil
	}
	var v domain.Money
	if err := json.Unmarshal(m[name], &v); err != nil {
		return nil, badf("%s: must be a JSON number", name)
	}
	return &v, nil
}

// uuidOrNull decodes a UUID string member; null yields nil.
func (m members) uuidOrNull(name string) (*uuid.UUID, error) {
	s, err := m.str(name, true)
	if err != nil || s == nil {
		if err != nil {
			return nil, badf("%s: must be a UUID or null", name)
		}
		return nil, nil
	}
	id, err := uuid.Parse(*s)
	if err != nil || len(*s) != 36 {
		return nil, badf("%s: must be a UUID or null", name)
	}
	return &id, nil
}

var currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)

// currencyCode decodes an ISO 4217 currency code member.
func (m members) currencyCode(name string) (string, error) {
	s, err := m.str(name, false)
	if err != nil {
		return "", err
	}
	if !currencyPattern.MatchString(*s) {
		return "", badf("%s: must be an ISO 4217 code such as USD", name)
	}
	if u, err := currency.ParseISO(*s); err != nil || u == (currency.Unit{}) {
		return "", badf("%s: %q is not an ISO 4217 currency code", name, *s)
	}
	return *s, nil
}

// strictDecode decodes raw, one JSON object parseObject has already
// accepted (no duplicate, nothing after it), into v, refusing unknown
// fields at every depth and strings where numbers are expected; messages
// start with path.
func strictDecode(raw []byte, path string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badf("%s: %s", path, decodeMessage(err))
	}
	return nil
}

// decodeMessage words an encoding/json error for a client.
func decodeMessage(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	msg := err.Error()
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return fmt.Sprintf("%s: must be %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
		}
		return "has the wrong type"
	case errors.As(err, &syntaxErr):
		return "malformed JSON"
	case strings.HasPrefix(msg, "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(msg, "json: unknown field ")
	}
	return strings.TrimPrefix(msg, "json: ")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return "a number"
}
