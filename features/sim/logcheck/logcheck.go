// Package logcheck finds, in an operator pod's log, the API server refusing
// the operator a request for want of a right: what features/sim fails on,
// since the chart's RBAC must be all the operator needs.
package logcheck

import "strings"

// RBACRefusal is where line quotes the API server refusing a request of a
// ServiceAccount for want of a right, -1 when it does not. Both of RBAC's
// refusals name the user: 'is forbidden: User "system:serviceaccount:..."
// cannot get resource ...' and '... forbidden: user "..." (groups=...) is
// attempting to grant RBAC permissions not currently held'. Other 403s are
// not about the chart's RBAC and are not counted: a write into a namespace
// being deleted ("forbidden: unable to create new content in namespace"),
// or a pod refusal the operator reports in a graph's status ("cannot create
// pods: ... forbidden: error looking up service account"). A refusal of the
// cluster's own controllers (kube-system) is not the operator's either.
func RBACRefusal(line string) int {
	lower := strings.ToLower(line)
	for from := 0; ; {
		i := strings.Index(lower[from:], `forbidden: user \"system:serviceaccount:`)
		if i < 0 {
			i = strings.Index(lower[from:], `forbidden: user "system:serviceaccount:`)
		}
		if i < 0 {
			return -1
		}
		i += from
		if !strings.Contains(lower[i:min(len(lower), i+60)], "serviceaccount:kube-system:") {
			return i
		}
		from = i + 1
	}
}

// Excerpt is line around at, at most n characters each side.
func Excerpt(line string, at, n int) string {
	start, end := max(0, at-n), min(len(line), at+n)
	out := line[start:end]
	if start > 0 {
		out = "..." + out
	}
	if end < len(line) {
		out += "..."
	}
	return out
}
