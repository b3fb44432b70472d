package main

import (
	"slices"
	"testing"
)

func TestRaise(t *testing.T) {
	have := map[string]string{
		"k8s.io/api":        "v0.37.0",                            // older: raised
		"k8s.io/kubectl":    "v0.37.0",                            // not in the reference: kept
		"golang.org/x/sync": "v0.22.0",                            // newer than the reference: kept
		"github.com/a/b":    "v1.2.3",                             // equal: kept
		"k8s.io/utils":      "v0.0.0-20260626114624-be93311217bd", // older pseudo-version: raised
		"github.com/c/d":    "v1.2.3",                             // reference has a prerelease of it: kept
	}
	want := map[string]string{
		"k8s.io/api":        "v0.37.2",
		"golang.org/x/sync": "v0.18.0",
		"github.com/a/b":    "v1.2.3",
		"k8s.io/utils":      "v0.0.0-20260707023825-cf1189d6abe3",
		"github.com/c/d":    "v1.2.3-rc.1",
	}
	got := raise(have, want)
	wantUp := []string{"k8s.io/api@v0.37.2", "k8s.io/utils@v0.0.0-20260707023825-cf1189d6abe3"}
	if !slices.Equal(got, wantUp) {
		t.Errorf("raise = %q, want %q", got, wantUp)
	}
}
