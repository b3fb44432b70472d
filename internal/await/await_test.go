package await

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

func TestUntil(t *testing.T) {
	cases := map[string]struct {
		f       func(n int) error
		wantErr string
	}{
		"succeeds on the third try": {f: func(n int) error {
			if n < 3 {
				return errors.New("only " + string(rune('0'+n)))
			}
			return nil
		}},
		"names what and the last error": {f: func(int) error { return errors.New("pods 1 of 2 ready") }, wantErr: "the graph is Ready: not within 1s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := 0
			err := Until(context.Background(), "the graph is Ready", func() error { n++; return tc.f(n) }, Within(time.Second), Every(10*time.Millisecond))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Until: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "pods 1 of 2 ready") {
				t.Fatalf("Until = %v, want it to contain %q and the last error", err, tc.wantErr)
			}
		})
	}
}

func TestUntilStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := Until(ctx, "never", func() error { return ErrNotYet }, Within(time.Minute), Every(10*time.Millisecond))
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("Until = %v after %s, want an error soon after the context ended", err, time.Since(start))
	}
}

func TestNew(t *testing.T) {
	g := New(t)
	n := 0
	g.Eventually(func() bool { n++; return n > 2 }).Should(gomega.BeTrue())
}
