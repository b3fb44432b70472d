package benchmarks

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// trail records, from the benchmark's watches, every status each component
// and graph was given, and when: where the writes beyond one per object
// went, what they said and how long after the graph's creation or the
// component's Deployment's (its rollout's start) they came.
type trail struct {
	mu sync.Mutex
	m  map[trailKey][]step
	// from names what a trail's ages count from: a component's Deployment
	// (its rollout), a graph itself.
	from map[trailKey]string
}

type step struct {
	at   time.Time
	says string
}

type trailKey struct {
	kind string
	key  types.NamespacedName
}

// digits are replaced in condition messages, so that trails group by form.
var digits = regexp.MustCompile(`[0-9]+`)

func newTrail() *trail { return &trail{m: map[trailKey][]step{}, from: map[trailKey]string{}} }

// statusOf summarises an object's status: the status itself, what it says,
// the object's kind in the trail (with its component type), its key, and
// the Deployment its ages count from ("" for the object itself).
type statusOf func(obj any) (status any, says, kind string, key types.NamespacedName, deployment string)

// handler records the status changes of the objects status summarises.
func (t *trail) handler(status statusOf) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			before, _, _, _, _ := status(oldObj)
			after, says, kind, key, deployment := status(newObj)
			if equality.Semantic.DeepEqual(before, after) {
				return
			}
			t.mu.Lock()
			defer t.mu.Unlock()
			k := trailKey{kind: kind, key: key}
			t.m[k] = append(t.m[k], step{at: time.Now(), says: says})
			if deployment != "" {
				t.from[k] = deployment
			}
		},
	}
}

func componentStatus(obj any) (any, string, string, types.NamespacedName, string) {
	dcd, ok := obj.(*v1alpha1.DynamoComponentDeployment)
	if !ok {
		return nil, "", "", types.NamespacedName{}, ""
	}
	says := "no Available"
	if c := meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionAvailable); c != nil {
		says = string(c.Status) + "/" + c.Reason + " (" + digits.ReplaceAllString(c.Message, "N") + ")"
	}
	if meta.FindStatusCondition(dcd.Status.Conditions, v1alpha1.ConditionStalled) != nil {
		says += "+Stalled"
	}
	if dcd.Status.ObservedGeneration != dcd.Generation {
		says += "(old gen)"
	}
	deployment := dcd.Name
	if dcd.Status.Service != nil && dcd.Status.Service.ComponentName != "" {
		deployment = dcd.Status.Service.ComponentName
	}
	return dcd.Status, says, "component " + string(dcd.Spec.ComponentType),
		types.NamespacedName{Namespace: dcd.Namespace, Name: dcd.Name}, deployment
}

func graphStatus(obj any) (any, string, string, types.NamespacedName, string) {
	dgd, ok := obj.(*v1alpha1.DynamoGraphDeployment)
	if !ok {
		return nil, "", "", types.NamespacedName{}, ""
	}
	says := string(dgd.Status.State)
	if c := meta.FindStatusCondition(dgd.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		says += "/" + c.Reason
	}
	if dgd.Status.ObservedGeneration != dgd.Generation {
		says += "(old gen)"
	}
	return dgd.Status, says, "graph", types.NamespacedName{Namespace: dgd.Namespace, Name: dgd.Name}, ""
}

// summary says, per kind, how many objects had how many statuses, and for
// those with more than one, what each said and when (bucketed), most
// frequent first. created gives the creation time of an object (a graph)
// or of a component's Deployment, from which ages count.
func (t *trail) summary(created func(kind string, key types.NamespacedName) time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	type kindStats struct {
		writes   map[int]int
		patterns map[string]int
	}
	kinds := map[string]*kindStats{}
	for k, steps := range t.m {
		kind := k.kind
		s := kinds[kind]
		if s == nil {
			s = &kindStats{writes: map[int]int{}, patterns: map[string]int{}}
			kinds[kind] = s
		}
		s.writes[len(steps)]++
		if len(steps) < 2 {
			continue
		}
		key := k.key
		if d := t.from[k]; d != "" {
			key.Name = d
		}
		origin := created(kind, key)
		parts := make([]string, len(steps))
		for i, st := range steps {
			parts[i] = fmt.Sprintf("%s@%s", st.says, bucket(st.at.Sub(origin)))
		}
		s.patterns[strings.Join(parts, " -> ")]++
	}
	var out []string
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		s := kinds[kind]
		var hist []string
		for _, n := range slices.Sorted(maps.Keys(s.writes)) {
			hist = append(hist, fmt.Sprintf("%d status(es): %d", n, s.writes[n]))
		}
		out = append(out, fmt.Sprintf("%s: %s", kind, strings.Join(hist, ", ")))
		pats := slices.Sorted(maps.Keys(s.patterns))
		sort.SliceStable(pats, func(i, j int) bool { return s.patterns[pats[i]] > s.patterns[pats[j]] })
		for i, p := range pats {
			if i == 12 {
				out = append(out, fmt.Sprintf("  ... %d more patterns", len(pats)-i))
				break
			}
			out = append(out, fmt.Sprintf("  %5d  %s", s.patterns[p], p))
		}
	}
	return strings.Join(out, "\n")
}

// bucket rounds an age up to a few steps, so that trails group.
func bucket(d time.Duration) string {
	for _, b := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute} {
		if d < b {
			return "<" + b.String()
		}
	}
	return ">=5m"
}
