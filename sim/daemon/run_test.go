package daemon

import (
	"slices"
	"strings"
	"testing"
)

func TestOperatorArgs(t *testing.T) {
	for _, tc := range []struct {
		mode       string
		extra      []string
		want, not  []string
		wantErrors string
	}{
		{mode: "cluster-wide", want: []string{"--enable-webhooks=false", "--metrics-bind-address=0"}, not: []string{"--webhook-url-host=127.0.0.1"}},
		{mode: "namespace:team-a", want: []string{"--restrict-namespace=team-a"}},
		{mode: "", extra: []string{"--enable-webhooks=true"}, want: []string{"--enable-webhooks=true", "--webhook-url-host=127.0.0.1"}},
		{mode: "", extra: []string{"--enable-webhooks", "--webhook-url-host=10.245.0.1"}, want: []string{"--webhook-url-host=10.245.0.1"}, not: []string{"--webhook-url-host=127.0.0.1"}},
		{mode: "hybrid", wantErrors: "unknown mode"},
	} {
		got, err := operatorArgs(tc.mode, tc.extra)
		if tc.wantErrors != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErrors) {
				t.Errorf("mode %q: error %v, want %q", tc.mode, err, tc.wantErrors)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("mode %q extra %v: %v lacks %s", tc.mode, tc.extra, got, w)
			}
		}
		for _, n := range tc.not {
			if slices.Contains(got, n) {
				t.Errorf("mode %q extra %v: %v has %s", tc.mode, tc.extra, got, n)
			}
		}
		// The user's flags come after the simulator's, so they win.
		if len(tc.extra) > 0 && slices.Index(got, tc.extra[0]) < slices.Index(got, "--enable-webhooks=false") {
			t.Errorf("user flags before the simulator's: %v", got)
		}
	}
}
