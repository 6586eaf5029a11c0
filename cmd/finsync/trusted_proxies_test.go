package main

import (
	"fmt"
	"testing"
)

func TestTrustedProxiesFromEnv(t *testing.T) {
	tests := []struct {
		env, want string
		bad       bool
	}{
		{"", "[]", false},
		{"10.0.0.1", "[10.0.0.1/32]", false},
		{" 10.0.0.0/8 , 192.168.1.7/24,::1", "[10.0.0.0/8 192.168.1.0/24 ::1/128]", false},
		{"10.0.0.1,", "[10.0.0.1/32]", false},
		{"proxy.internal", "", true},
		{"10.0.0.0/33", "", true},
	}
	for _, tt := range tests {
		got, err := config{TrustedProxies: tt.env}.trustedProxies()
		if tt.bad {
			if err == nil {
				t.Errorf("%q: accepted as %v", tt.env, got)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != tt.want {
			t.Errorf("%q: got %v, %v; want %s", tt.env, got, err, tt.want)
		}
	}
}
