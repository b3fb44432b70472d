package daemon

import (
	"slices"
	"strings"
	"testing"
)

func TestOperatorArgs(t *testing.T) {
	for _, tc := range []struct {
		namespace string
		slot      int
		extra     []string
		want, not []string
	}{
		{want: []string{"--enable-webhooks=false", "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:8081"}, not: []string{"--webhook-url-host=127.0.0.1"}},
		{namespace: "team-a", slot: 1, want: []string{"--restrict-namespace=team-a", "--health-probe-bind-address=127.0.0.1:8082", "--webhook-port=9444"}},
		{extra: []string{"--enable-webhooks=true"}, want: []string{"--enable-webhooks=true", "--webhook-url-host=127.0.0.1"}},
		{extra: []string{"--enable-webhooks", "--webhook-url-host=10.245.0.1"}, want: []string{"--webhook-url-host=10.245.0.1"}, not: []string{"--webhook-url-host=127.0.0.1"}},
	} {
		got := operatorArgs(tc.namespace, tc.slot, tc.extra)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%+v: %v lacks %s", tc, got, w)
			}
		}
		for _, n := range tc.not {
			if slices.Contains(got, n) {
				t.Errorf("%+v: %v has %s", tc, got, n)
			}
		}
		// The user's flags come after the simulator's, so they win.
		if len(tc.extra) > 0 && slices.Index(got, tc.extra[0]) < slices.Index(got, "--enable-webhooks=false") {
			t.Errorf("user flags before the simulator's: %v", got)
		}
	}
}

func TestPlanOperators(t *testing.T) {
	for mode, want := range map[string][]opPlan{
		"":                 {{"operator", ""}},
		"cluster-wide":     {{"operator", ""}},
		"namespace:team-a": {{"operator", "team-a"}},
		"hybrid:team-b":    {{"operator", ""}, {"operator-team-b", "team-b"}},
	} {
		got, err := planOperators(mode)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("planOperators(%q) = %v, %v; want %v", mode, got, err, want)
		}
	}
	for _, bad := range []string{"hybrid", "namespace:", "everything"} {
		if _, err := planOperators(bad); err == nil || !strings.Contains(err.Error(), "unknown mode") {
			t.Errorf("planOperators(%q) = %v, want an unknown-mode error", bad, err)
		}
	}
}
