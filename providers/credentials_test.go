package providers_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/finsync/finsync/domain"
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

// TestProviderSettings: a connection may leave the settings' keys out of
// its credentials or carry them (winning over the provider's); settings are
// checked against their own schema; values never show in errors.
func TestProviderSettings(t *testing.T) {
	d := providers.Description{ProviderProfile: domain.ProviderProfile{Name: "p"},
		Credentials: []providers.CredentialField{{Key: "session", Required: true}},
		Settings:    []providers.CredentialField{{Key: "app", Required: true}, {Key: "key", Required: true}}}
	for _, ok := range []string{`{"session":"s"}`, `{"session":"s","app":"mine","key":"k"}`} {
		if err := d.CheckCredentials([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if err := d.CheckCredentials([]byte(`{"app":"a"}`)); err == nil || !strings.Contains(err.Error(), "lacks session") {
		t.Errorf("credentials without their own key: %v", err)
	}
	if err := d.CheckSettings([]byte(`{"app":"a","session":"secret-value"}`)); err == nil || strings.Contains(err.Error(), "secret-value") ||
		!strings.Contains(err.Error(), `unknown key "session"`) || !strings.Contains(err.Error(), "lacks key") {
		t.Errorf("settings with a connection's key and without one of theirs: %v", err)
	}
	if err := (providers.Description{}).CheckSettings([]byte(`{}`)); err == nil {
		t.Error("settings accepted for a provider that declares none")
	}
	merged, err := providers.MergeSettings([]byte(`{"app":"shared","key":"k"}`), []byte(`{"session":"s","app":"mine"}`))
	var m map[string]string
	if err != nil || json.Unmarshal(merged, &m) != nil || m["app"] != "mine" || m["key"] != "k" || m["session"] != "s" {
		t.Fatalf("merged %s, %v", merged, err)
	}
	if missing := d.MissingSettings([]byte(`{"session":"s","app":"a"}`)); len(missing) != 1 || missing[0] != "key" {
		t.Errorf("missing settings %v, want key", missing)
	}
	if same, err := providers.MergeSettings(nil, []byte(`{"session":"s"}`)); err != nil || string(same) != `{"session":"s"}` {
		t.Errorf("no settings: %s, %v", same, err)
	}
	if _, err := providers.MergeSettings([]byte(`["secret-value"]`), []byte(`{}`)); err == nil || strings.Contains(err.Error(), "secret-value") {
		t.Errorf("settings not an object: %v", err)
	}
}

// TestCheckCredentialsWording pins whole messages for one fault each, as
// operators read them: duplicates at the top level are "given twice", one
// inside a value is that value's problem, and no value is ever shown.
func TestCheckCredentialsWording(t *testing.T) {
	d := providers.Description{Credentials: []providers.CredentialField{
		{Key: "api_key", Required: true},
		{Key: "secret", Required: true},
		{Key: "account"},
	}}
	d.Name = "example"
	const keys = " (keys: api_key, secret, account?)"
	for in, want := range map[string]string{
		`{"api_key":"k","secret":"s","secret":"s2"}`:        "credentials for example: secret given twice" + keys,
		`{"api_key":"k","secret":{"a":"hunter2","a":"x"}}`:  "credentials for example: secret must be a string" + keys,
		`{"api_key":"k","secret":"s","nope":{"a":1,"a":2}}`: `credentials for example: unknown key "nope"` + keys,
		`{"api_key":"k","secret":"s","nope":"hunter2"}`:     `credentials for example: unknown key "nope"` + keys,
		`[]`:                               "credentials for example must be a JSON object with the keys api_key, secret, account?",
		`{"api_key":"k","secret":"s"} "x"`: "credentials for example must be one JSON object, with nothing after it",
	} {
		err := d.CheckCredentials([]byte(in))
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	err := d.CheckCredentials([]byte(`{"api_key":"hunter2" "secret":"s"}`))
	if err == nil || !strings.HasPrefix(err.Error(), "credentials for example are not valid JSON: ") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("malformed credentials: %v", err)
	}
}
