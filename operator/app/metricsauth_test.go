package app

import (
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// Reviews are trusted for their lifetime only, and callers with ever new
// tokens cannot grow the cache past its bound.
func TestScraperReviewCache(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	var c ttlCache[bool]
	c.put("a", true, clk.Now(), time.Minute)
	if v, ok := c.get("a", clk.Now().Add(59*time.Second)); !ok || !v {
		t.Fatalf("a review within its lifetime: %v %v", v, ok)
	}
	if _, ok := c.get("a", clk.Now().Add(time.Minute)); ok {
		t.Fatal("a review past its lifetime is still trusted")
	}

	for i := 0; i < 2*maxCached; i++ {
		c.put(fmt.Sprint(i), true, clk.Now(), time.Minute)
	}
	if n := len(c.entries); n > maxCached {
		t.Fatalf("%d entries cached, want at most %d", n, maxCached)
	}
	// A full cache still keeps the newest review.
	c.put("real", true, clk.Now(), time.Minute)
	if _, ok := c.get("real", clk.Now()); !ok || len(c.entries) > maxCached {
		t.Fatalf("a full cache did not keep the newest review (%d entries)", len(c.entries))
	}
	// Once the old entries expire they are swept.
	later := clk.Now().Add(2 * time.Minute)
	c.put("new", true, later, time.Minute)
	if _, ok := c.get("new", later); !ok || len(c.entries) != 1 {
		t.Fatalf("after the old reviews expired: %d entries, want only the new one", len(c.entries))
	}
}
