package steps

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/cucumber/godog"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Steps about the operator's /metrics. The registry is process-wide and
// scenarios share the operator, so counters are compared with a scrape
// taken when the scenario began (the baseline), and the inventory is
// read for the scenario's own namespace.

func registerMetricsSteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the operator's metrics are scraped$`, w.scrapeBaseline)
	sc.Step(`^the metrics eventually count more reconciles of (\S+) than before$`, w.moreReconciles)
	sc.Step(`^the metrics eventually count a denial of (\S+) (\S+) for the rule `+quoted+`$`, w.denialCounted)
	sc.Step(`^the metrics eventually count (\d+) (\S+) in state `+quoted+` in this namespace$`, w.inventoryCounts)
	sc.Step(`^the metrics eventually have no resources_total series for this namespace$`, w.noInventorySeries)
}

// metricsScrape is one parsed scrape of /metrics.
type metricsScrape = map[string]*dto.MetricFamily

func (w *world) scrape(ctx context.Context) (metricsScrape, error) {
	if w.cluster.ScrapeMetrics == nil {
		return nil, fmt.Errorf("this suite cannot scrape the operator's /metrics")
	}
	body, err := w.cluster.ScrapeMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return ParseMetrics(body)
}

// ParseMetrics parses a scrape in the text exposition format.
func ParseMetrics(body []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing the scrape: %w", err)
	}
	return mf, nil
}

// Sum adds the values of the counter or gauge name over the series whose
// labels include want.
func Sum(mf map[string]*dto.MetricFamily, name string, want map[string]string) (total float64, series int) {
	fam := mf[name]
	if fam == nil {
		return 0, 0
	}
	for _, m := range fam.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		series++
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		}
	}
	return total, series
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func (w *world) scrapeBaseline(ctx context.Context) error {
	s, err := w.scrape(ctx)
	w.metricsBaseline = s
	return err
}

func (w *world) baseline() (metricsScrape, error) {
	if w.metricsBaseline == nil {
		return nil, fmt.Errorf(`no baseline: begin with "the operator's metrics are scraped"`)
	}
	return w.metricsBaseline, nil
}

func (w *world) moreReconciles(ctx context.Context, resourceType string) error {
	base, err := w.baseline()
	if err != nil {
		return err
	}
	labels := map[string]string{"resource_type": resourceType}
	before, _ := Sum(base, "dynamo_operator_reconcile_total", labels)
	return w.eventually(ctx, "more reconciles of "+resourceType+" counted", func() error {
		now, err := w.scrape(ctx)
		if err != nil {
			return err
		}
		after, _ := Sum(now, "dynamo_operator_reconcile_total", labels)
		if after <= before {
			return fmt.Errorf("dynamo_operator_reconcile_total{resource_type=%q} is %g, as before", resourceType, after)
		}
		return nil
	})
}

func (w *world) denialCounted(ctx context.Context, operation, resourceType, rule string) error {
	base, err := w.baseline()
	if err != nil {
		return err
	}
	labels := map[string]string{"resource_type": resourceType, "operation": operation, "reason": rule}
	before, _ := Sum(base, "dynamo_operator_webhook_denials_total", labels)
	return w.eventually(ctx, "a denial of "+operation+" "+resourceType+" for "+rule+" counted", func() error {
		now, err := w.scrape(ctx)
		if err != nil {
			return err
		}
		after, _ := Sum(now, "dynamo_operator_webhook_denials_total", labels)
		if after < before+1 {
			return fmt.Errorf("dynamo_operator_webhook_denials_total%v went from %g to %g", labels, before, after)
		}
		return nil
	})
}

func (w *world) inventoryCounts(ctx context.Context, n, resourceType, state string) error {
	want, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return err
	}
	labels := map[string]string{"resource_type": resourceType, "namespace": w.namespace, "state": state}
	return w.eventually(ctx, "the count of "+resourceType+" in state "+state+" to be "+n, func() error {
		now, err := w.scrape(ctx)
		if err != nil {
			return err
		}
		got, _ := Sum(now, "dynamo_operator_resources_total", labels)
		if got != want {
			return fmt.Errorf("dynamo_operator_resources_total%v is %g, want %g (this namespace: %s)", labels, got, want,
				describeSeries(now, "dynamo_operator_resources_total", map[string]string{"namespace": w.namespace}))
		}
		return nil
	})
}

func (w *world) noInventorySeries(ctx context.Context) error {
	return w.eventually(ctx, "no resources_total series for this namespace", func() error {
		now, err := w.scrape(ctx)
		if err != nil {
			return err
		}
		if _, n := Sum(now, "dynamo_operator_resources_total", map[string]string{"namespace": w.namespace}); n > 0 {
			return fmt.Errorf("series left: %s", describeSeries(now, "dynamo_operator_resources_total", map[string]string{"namespace": w.namespace}))
		}
		return nil
	})
}

// describeSeries lists the series of name with labels want, for messages.
func describeSeries(mf map[string]*dto.MetricFamily, name string, want map[string]string) string {
	var out []string
	for _, m := range mf[name].GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+strconv.Quote(l.GetValue()))
		}
		out = append(out, fmt.Sprintf("{%s} %g", strings.Join(ls, ","), m.GetGauge().GetValue()))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}
