package webhooks

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestDrainClosesEachConnectionAfterItsAnswer(t *testing.T) {
	d := &Drain{}
	srv := httptest.NewServer(d.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	})))
	defer srv.Close()
	get := func() *http.Response {
		t.Helper()
		resp, err := srv.Client().Post(srv.URL, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	if resp := get(); resp.Close {
		t.Errorf("before draining: the server closed the connection (Connection: %q); want it kept alive", resp.Header.Get("Connection"))
	}
	if err := d.Check(nil); err != nil {
		t.Errorf("before draining: readiness = %v, want ready", err)
	}
	d.Begin()
	if resp := get(); !resp.Close {
		t.Error("while draining: the connection was kept alive; want Connection: close after the answer")
	}
	if err := d.Check(nil); !errors.Is(err, ErrDraining) {
		t.Errorf("while draining: readiness = %v, want %v", err, ErrDraining)
	}
}

func TestNilDrainChangesNothing(t *testing.T) {
	var d *Drain
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if got := d.Wrap(h); got == nil {
		t.Fatal("Wrap on nil returned nil")
	}
	if d.Draining() || d.Check(nil) != nil {
		t.Error("a nil Drain reports draining")
	}
}
