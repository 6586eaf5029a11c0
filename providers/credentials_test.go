package providers_test

import (
	"strings"
	"testing"

	"github.com/finsync/finsync/providers"
)

func TestCheckCredentials(t *testing.T) {
	d := providers.Description{Credentials: []providers.CredentialField{
		{Key: "api_key", Required: true},
		{Key: "secret", Required: true},
		{Key: "account"},
	}}
	d.Name = "example"
	for _, ok := range []string{
		`{"api_key":"k","secret":"s"}`,
		` {"api_key":"k","secret":"s","account":"a"} `,
		"{ \"api_key\" :\n \"k\" , \"secret\":\t\"s\" }",
	} {
		if err := d.CheckCredentials([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		`{"nope":1}`: `unknown key "nope"`,
		`{"api_key":"k","secret":"s","nope":"x"}`:    `unknown key "nope"`,
		`{"api_key":1,"secret":"s"}`:                 "api_key must be a string",
		`{"api_key":"k","secret":{"a":"b"}}`:         "secret must be a string",
		`{"api_key":"k","secret":["s"]}`:             "secret must be a string",
		`{"api_key":"k","secret":null}`:              "secret must be a string",
		`{"api_key":"k","secret":true}`:              "secret must be a string",
		`{"api_key":"","secret":"s"}`:                "api_key is empty",
		`{"api_key":"  ","secret":"s"}`:              "api_key is empty",
		`{"api_key":"k","secret":"s","account":""}`:  "account is empty",
		`{"api_key":"k"}`:                            "lacks secret",
		`{"api_key":"k","api_key":"j","secret":"s"}`: "api_key given twice",
		`["api_key","secret"]`:                       "must be a JSON object",
		`"api_key"`:                                  "must be a JSON object",
		`null`:                                       "must be a JSON object",
		``:                                           "must be a JSON object",
		`{"api_key":"k","secret":"s"`:                "not valid JSON",
		`{"api_key":"k","secret":"s"} {}`:            "nothing after it",
		`{"api_key":"k","secret":"s"}x`:              "nothing after it",
		`{"api_key":"k",,"secret":"s"}`:              "not valid JSON",
	} {
		err := d.CheckCredentials([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", bad, err, want)
		}
	}
	// Values are never quoted back.
	if err := d.CheckCredentials([]byte(`{"api_key":7,"secret":"hunter2","x":"y"}`)); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v", err)
	}
}
