package spec

import (
	"encoding/json"
	"testing"
)

func render(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestSchemaHelpers(t *testing.T) {
	tests := []struct {
		name string
		got  Obj
		want string
	}{
		{"keys keep their order", Obj{{"b", 1}, {"a", 2}}, `{"b":1,"a":2}`},
		{"with replaces in place", Obj{{"a", 1}, {"b", 2}}.with("a", 3), `{"a":3,"b":2}`},
		{"nullable primitive", orNull(uuidS()), `{"type":["string","null"],"format":"uuid"}`},
		{"nullable enum admits null", orNull(enum("a", "b")), `{"type":["string","null"],"enum":["a","b",null]}`},
		{"nullable reference", orNull(ref("X")), `{"anyOf":[{"$ref":"#/components/schemas/X"},{"type":"null"}]}`},
		{"nullable array", orNull(array(str())), `{"type":["array","null"],"items":{"type":"string"}}`},
		{
			"closed object lists required fields",
			object(req("a", str()), opt("b", number())),
			`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string"},"b":{"type":"number","format":"double"}}}`,
		},
		{
			"object of optional fields has no required list",
			object(opt("b", number())),
			`{"type":"object","additionalProperties":false,"properties":{"b":{"type":"number","format":"double"}}}`,
		},
		{
			"patch object needs one field",
			patchObject(req("a", str())),
			`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}},"minProperties":1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(t, tt.got); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestOperationResponsesAreOrderedByStatus(t *testing.T) {
	o := op{
		id: "x", summary: "x", status: 201, respDesc: "made", schema: str(),
		errors: []string{"InternalError", "BadRequest", "Unauthorized"},
	}
	got := o.responses(v2Statuses())
	var codes []string
	for _, kv := range got {
		codes = append(codes, kv.Key)
	}
	if render(t, codes) != `["201","400","401","500"]` {
		t.Errorf("codes = %v", codes)
	}
}

func TestRenderPathsGroupsMethods(t *testing.T) {
	paths := renderPaths([]route{
		{"/a", "get", op{id: "getA", summary: "a", status: 200, respDesc: "a", schema: str()}},
		{"/b", "get", op{id: "getB", summary: "b", status: 200, respDesc: "b", schema: str()}},
		{"/a", "post", op{id: "postA", summary: "a", status: 201, respDesc: "a", schema: str()}},
	}, v2Statuses())
	if len(paths) != 2 {
		t.Fatalf("got %d paths, want 2", len(paths))
	}
	item, _ := paths.Get("/a")
	if _, ok := item.(Obj).Get("post"); !ok {
		t.Errorf("/a lost its post operation: %s", render(t, item))
	}
}
