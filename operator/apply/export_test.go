package apply

// FullChecks is how many times a whole live object was compared with a
// desired one.
func (a *Applier) FullChecks() int64 { return a.fullChecks.Load() }

// Verified is how many objects' last verification the Applier remembers.
func (a *Applier) Verified() int { return a.verified.len() }
