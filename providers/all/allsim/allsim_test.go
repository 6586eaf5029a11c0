package allsim_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
)

// TestEveryAdapterHasASimulator checks that the simulators are the
// adapters, one for one and in the same order, each with credentials whose
// distinguishing key it can read back and a base URL below the root.
func TestEveryAdapterHasASimulator(t *testing.T) {
	adapters := all.NewRegistry().Names()
	sims := allsim.Providers().Names()
	if !slices.Equal(slices.Sorted(slices.Values(sims)), adapters) {
		t.Fatalf("simulated providers %v, adapters %v", sims, adapters)
	}
	for _, name := range sims {
		key, err := allsim.CredentialKey(name, allsim.Credentials(name, "check"))
		if err != nil || key == "" {
			t.Errorf("%s: credential key %q, %v", name, key, err)
		}
		if u := allsim.BaseURL(name, "http://sim/"); len(u) < len("http://sim") || u[:len("http://sim")] != "http://sim" {
			t.Errorf("%s: base URL %q not below the root", name, u)
		}
	}
	if allsim.Credentials("nope", "x") != nil {
		t.Error("credentials for an unknown provider")
	}
}

// TestSimulatorCredentialsFitTheirSchema checks that every simulated
// provider's credentials are an object of the schema its adapter declares,
// for whatever providers are registered.
func TestSimulatorCredentialsFitTheirSchema(t *testing.T) {
	reg := all.NewRegistry()
	for _, p := range allsim.Providers().Names() {
		d, ok := reg.Describe(p)
		if !ok {
			t.Fatalf("%s: no adapter", p)
		}
		if err := d.CheckCredentials(allsim.Credentials(p, "demo")); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		settings, own := allsim.Settings(p), allsim.OwnCredentials(p, "demo")
		if (settings != nil) != (len(d.Settings) > 0) {
			t.Errorf("%s: simulator settings %v, adapter declares %d", p, settings != nil, len(d.Settings))
			continue
		}
		if settings == nil {
			continue
		}
		if err := d.CheckSettings(settings); err != nil {
			t.Errorf("%s settings: %v", p, err)
		}
		merged, err := providers.MergeSettings(settings, own)
		required := slices.ContainsFunc(d.Settings, func(f providers.CredentialField) bool { return f.Required })
		if err != nil || !jsonEqual(merged, allsim.Credentials(p, "demo")) || (required && len(d.MissingSettings(own)) == 0) || len(d.MissingSettings(merged)) != 0 {
			t.Errorf("%s: own credentials %s merged with the settings are not the credentials (%v)", p, own, err)
		}
	}
}

// jsonEqual reports whether a and b decode to equal values.
func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// ExampleCredentials shows a simulated connection's credential keys.
func ExampleCredentials() {
	var m map[string]string
	_ = json.Unmarshal(allsim.Credentials("enablebanking", "demo"), &m)
	fmt.Println(slices.Sorted(maps.Keys(m)))
	// Output:
	// [application_id private_key session_id]
}
