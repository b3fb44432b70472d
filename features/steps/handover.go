package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/scope"
)

// handover is what a hybrid scenario saw of a namespace-scoped release:
// when its operator took the namespace (the marker Lease's acquireTime)
// and when its uninstall began (it gives the namespace back no earlier).
type handover struct {
	owned    map[string]time.Time // namespace -> acquired
	released map[string]time.Time // namespace -> uninstall began
}

func registerHandoverSteps(sc *godog.ScenarioContext, w *simWorld) {
	sc.Step(`^the release "([^"]+)" owns the namespace "([^"]+)"$`, w.releaseOwns)
	sc.Step(`^I uninstall the namespace-scoped release "([^"]+)"$`, w.uninstallScoped)
	sc.Step(`^the namespace "([^"]+)" is handed back$`, w.handedBack)
	sc.Step(`^the cluster-wide operator wrote nothing in the namespace "([^"]+)" while the release "([^"]+)" owned it$`, w.clusterWroteNothing)
}

func (w *simWorld) marker(ctx context.Context, ns string) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	err := w.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: scope.LeaseName}, l)
	return l, err
}

// releaseOwns waits until the namespace's marker Lease is held by the
// release's operator version (its image tag) and notes when it took it.
func (w *simWorld) releaseOwns(ctx context.Context, release, ns string) error {
	r, _, ok := w.InstalledRelease(release)
	if !ok {
		return fmt.Errorf("the scenario installed no release %q", release)
	}
	return w.eventually(ctx, "the release "+release+" owning "+ns, func() error {
		l, err := w.marker(ctx, ns)
		if err != nil {
			return err
		}
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		if !strings.Contains(holder, r.Tag) || l.Spec.AcquireTime == nil {
			return fmt.Errorf("the marker Lease in %s is held by %q (acquired %v), want version %s", ns, holder, l.Spec.AcquireTime, r.Tag)
		}
		if w.handover.owned == nil {
			w.handover.owned = map[string]time.Time{}
		}
		w.handover.owned[ns] = l.Spec.AcquireTime.Time
		return nil
	})
}

func (w *simWorld) uninstallScoped(ctx context.Context, release string) error {
	_, ns, ok := w.InstalledRelease(release)
	if !ok {
		return fmt.Errorf("the scenario installed no release %q", release)
	}
	if w.handover.released == nil {
		w.handover.released = map[string]time.Time{}
	}
	w.handover.released[ns] = time.Now()
	return w.UninstallRelease(ctx, release)
}

// handedBack waits until the namespace's marker Lease is gone (a cleanly
// stopped operator deletes it) and records how long that took.
func (w *simWorld) handedBack(ctx context.Context, ns string) error {
	start := w.handover.released[ns]
	err := w.eventually(ctx, "the namespace "+ns+" handed back", func() error {
		_, err := w.marker(ctx, ns)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("the marker Lease in %s is still there", ns)
	})
	if err == nil && !start.IsZero() {
		w.Figure("uninstall to marker Lease gone (s)", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
	}
	return err
}

// clusterWroteNothing checks, from the audit log, that the cluster-wide
// operator wrote nothing in ns from the moment the release took it until
// its uninstall began (or now); the release's own writes are a figure (a
// hand-over of kept content needs none).
func (w *simWorld) clusterWroteNothing(_ context.Context, ns, release string) error {
	from, ok := w.handover.owned[ns]
	if !ok {
		return fmt.Errorf("no release owned %s in this scenario", ns)
	}
	to := time.Now()
	if t, ok := w.handover.released[ns]; ok {
		to = t
	}
	cw, err := w.WritesIn(w.OperatorUser(ClusterRelease), []string{ns}, from, to)
	if err != nil {
		return err
	}
	own, err := w.WritesIn(w.OperatorUser(release), []string{ns}, from, to)
	if err != nil {
		return err
	}
	w.Figure("writes by the cluster-wide operator in "+ns+" while "+release+" owned it", len(cw))
	w.Figure("writes by "+release+" in "+ns, len(own))
	if len(cw) > 0 {
		return fmt.Errorf("the cluster-wide operator wrote %d times in %s while %s owned it:\n  %s", len(cw), ns, release, strings.Join(head(cw, 20), "\n  "))
	}
	return nil
}
