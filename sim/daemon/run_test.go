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
		want      []string
	}{
		{want: []string{"--enable-webhooks=true", "--webhook-url-host=127.0.0.1", "--metrics-bind-address=0",
			"--health-probe-bind-address=127.0.0.1:8081", "--webhook-cert-dir=/certs", "--webhook-cert-secret=dynamo-operator-webhook-cert"}},
		{namespace: "team-a", slot: 1, want: []string{"--restrict-namespace=team-a", "--health-probe-bind-address=127.0.0.1:8082",
			"--webhook-port=9444", "--webhook-cert-secret=dynamo-operator-webhook-cert-team-a"}},
		{extra: []string{"--enable-webhooks=false"}, want: []string{"--enable-webhooks=false"}},
	} {
		got := operatorArgs(tc.namespace, tc.slot, "/certs", tc.extra)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%+v: %v lacks %s", tc, got, w)
			}
		}
		// The user's flags come after the simulator's, so they win.
		if len(tc.extra) > 0 && slices.Index(got, tc.extra[0]) < slices.Index(got, "--enable-webhooks=true") {
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
