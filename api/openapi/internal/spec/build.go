// Package spec builds finsync's OpenAPI 3.1 documents as ordered JSON values.
//
// Package openapi renders the documents with these builders when the API
// starts, for the providers it is given (the registry's), so that every
// schema is built by the same few helpers: objects are closed
// (additionalProperties false) and list every field they always carry as
// required, nullable fields use type unions.
package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// UnroutedExtension is the key, at the top of both documents, of the
// responses to requests that match no operation (package openapi exports
// it under the same name).
const UnroutedExtension = "x-unrouted-responses"

// KV is one key of an Obj with its value.
type KV struct {
	Key   string
	Value any
}

// Obj is a JSON object whose keys keep the order they were given in.
type Obj []KV

// MarshalJSON writes the object with its keys in order.
func (o Obj) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		key, err := json.Marshal(kv.Key)
		if err != nil {
			return nil, fmt.Errorf("marshal key %q: %w", kv.Key, err)
		}
		val, err := json.Marshal(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("marshal value of %q: %w", kv.Key, err)
		}
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(val)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Get returns the value stored under key, if any.
func (o Obj) Get(key string) (any, bool) {
	for _, kv := range o {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// with returns a copy of o with key set to value (replaced in place when
// present, appended otherwise).
func (o Obj) with(key string, value any) Obj {
	out := make(Obj, 0, len(o)+1)
	found := false
	for _, kv := range o {
		if kv.Key == key {
			kv.Value = value
			found = true
		}
		out = append(out, kv)
	}
	if !found {
		out = append(out, KV{key, value})
	}
	return out
}

// Marshal renders a document as indented JSON ending with a newline.
func Marshal(doc Obj) ([]byte, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("marshal document: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, fmt.Errorf("indent document: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// Schema helpers. Numbers (amounts, balances, prices) stay JSON numbers on
// the wire, as the API contracts (docs/api-v1.md, docs/api-v2.md) show
// them; format double makes generated
// clients decode them as float64 rather than float32.

func typed(t string) Obj { return Obj{{"type", t}} }

func str() Obj       { return typed("string") }
func number() Obj    { return Obj{{"type", "number"}, {"format", "double"}} }
func boolean() Obj   { return typed("boolean") }
func integer() Obj   { return typed("integer") }
func uuidS() Obj     { return strFormat("uuid") }
func date() Obj      { return strFormat("date") }
func dateTime() Obj  { return strFormat("date-time") }
func currency() Obj  { return str().with("pattern", "^[A-Z]{3}$") }
func nonEmpty() Obj  { return str().with("minLength", 1) }
func count() Obj     { return integer().with("minimum", 0) }
func anyObject() Obj { return typed("object") }

func strFormat(format string) Obj { return Obj{{"type", "string"}, {"format", format}} }

func enum(values ...string) Obj { return Obj{{"type", "string"}, {"enum", values}} }

func constant(value any) Obj { return Obj{{"const", value}} }

func ref(name string) Obj { return Obj{{"$ref", "#/components/schemas/" + name}} }

func array(items Obj) Obj { return Obj{{"type", "array"}, {"items", items}} }

func intRange(lo, hi int) Obj {
	return Obj{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}}
}

func describe(s Obj, text string) Obj { return s.with("description", text) }

// orNull widens a schema to also accept null: a type union for typed
// schemas (with null added to any enum), an anyOf otherwise.
func orNull(s Obj) Obj {
	t, ok := s.Get("type")
	name, isString := t.(string)
	if !ok || !isString {
		return Obj{{"anyOf", []Obj{s, typed("null")}}}
	}
	out := s.with("type", []string{name, "null"})
	if values, ok := s.Get("enum"); ok {
		if list, ok := values.([]string); ok {
			widened := make([]any, 0, len(list)+1)
			for _, v := range list {
				widened = append(widened, v)
			}
			out = out.with("enum", append(widened, nil))
		}
	}
	return out
}

// field is one property of an object schema.
type field struct {
	name     string
	schema   Obj
	optional bool
}

// req is a property the object always carries (possibly as null).
func req(name string, schema Obj) field { return field{name: name, schema: schema} }

// opt is a property the object may omit.
func opt(name string, schema Obj) field { return field{name: name, schema: schema, optional: true} }

// object is a closed object schema: unknown properties are rejected and
// every non-optional field is required.
func object(fields ...field) Obj {
	props := make(Obj, 0, len(fields))
	required := make([]string, 0, len(fields))
	for _, f := range fields {
		props = append(props, KV{f.name, f.schema})
		if !f.optional {
			required = append(required, f.name)
		}
	}
	out := Obj{{"type", "object"}, {"additionalProperties", false}}
	if len(required) > 0 {
		out = append(out, KV{"required", required})
	}
	return append(out, KV{"properties", props})
}

// patchObject is a closed object of optional fields of which at least one
// must be present.
func patchObject(fields ...field) Obj {
	for i := range fields {
		fields[i].optional = true
	}
	return object(fields...).with("minProperties", 1)
}
