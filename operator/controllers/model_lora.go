package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// loraCallTimeout bounds one call to a worker's system server: a worker
// that hangs is retried like one that fails.
const loraCallTimeout = 10 * time.Second

// loraAPI calls the LoRA endpoints of Dynamo's runtime system server
// (POST /v1/loras, GET /v1/loras, DELETE /v1/loras/<name>).
type loraAPI struct{ http *http.Client }

type loraSource struct {
	URI string `json:"uri"`
}

type loraEntry struct {
	Name   string     `json:"lora_name"`
	Source loraSource `json:"source"`
}

// ensure makes want loaded on the endpoint at base: it lists the adapters
// and loads want unless it is there with the same source. It reports
// whether it loaded (false: it was there already).
func (a loraAPI) ensure(ctx context.Context, base string, want loraSpec) (bool, error) {
	have, err := a.list(ctx, base)
	if err != nil {
		return false, err
	}
	for _, l := range have {
		if l.Name == want.Name && (l.Source.URI == "" || l.Source.URI == want.URI) {
			return false, nil
		}
	}
	return true, a.load(ctx, base, want)
}

func (a loraAPI) list(ctx context.Context, base string) ([]loraEntry, error) {
	body, err := a.call(ctx, http.MethodGet, base+"/v1/loras", nil)
	if err != nil {
		return nil, err
	}
	var resp struct {
		LoRAs []loraEntry `json:"loras"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("GET /v1/loras: the answer is not a list of adapters: %w", err)
	}
	return resp.LoRAs, nil
}

func (a loraAPI) load(ctx context.Context, base string, want loraSpec) error {
	req, err := json.Marshal(loraEntry{Name: want.Name, Source: loraSource{URI: want.URI}})
	if err != nil {
		return err
	}
	_, err = a.call(ctx, http.MethodPost, base+"/v1/loras", req)
	return err
}

// unload removes the adapter name; one that is not loaded (404) is
// already gone. Names such as org/adapter are escaped into one path
// segment.
func (a loraAPI) unload(ctx context.Context, base, name string) error {
	_, err := a.call(ctx, http.MethodDelete, base+"/v1/loras/"+url.PathEscape(name), nil)
	var he *httpError
	if asHTTPError(err, &he) && he.status == http.StatusNotFound {
		return nil
	}
	return err
}

// httpError is an answer other than 2xx; its text names the call, the
// status and the worker's own message, and stays the same across retries.
type httpError struct {
	method, path string
	status       int
	message      string
}

func (e *httpError) Error() string {
	msg := fmt.Sprintf("%s %s answered %d", e.method, e.path, e.status)
	if e.message != "" {
		msg += ": " + e.message
	}
	return msg
}

func asHTTPError(err error, target **httpError) bool {
	he, ok := err.(*httpError)
	if ok {
		*target = he
	}
	return ok
}

func (a loraAPI) call(ctx context.Context, method, rawURL string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, loraCallTimeout)
	defer cancel()
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.http.Do(req)
	if err != nil {
		// Only the cause: the URL is in the status beside it already, and
		// a stable text keeps the status from changing on every retry.
		return nil, fmt.Errorf("%s %s: %w", method, u.EscapedPath(), rootCause(err))
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, u.EscapedPath(), err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, &httpError{method: method, path: u.EscapedPath(), status: resp.StatusCode, message: workerMessage(out)}
	}
	return out, nil
}

// workerMessage is the "error" or "message" of a JSON answer, else its text.
func workerMessage(body []byte) string {
	var m struct{ Error, Message string }
	if json.Unmarshal(body, &m) == nil {
		if m.Error != "" {
			return m.Error
		}
		if m.Message != "" {
			return m.Message
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// rootCause unwraps url.Error and friends down to the network's own words
// ("connection refused"), which do not change from one attempt to the next.
func rootCause(err error) error {
	for {
		var next error
		switch e := err.(type) {
		case *url.Error:
			next = e.Err
		case interface{ Unwrap() error }:
			next = e.Unwrap()
		}
		if next == nil {
			return err
		}
		err = next
	}
}
