package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// scrapeStore holds scrapes of /metrics as Prometheus would store them:
// one series per metric and label set (histograms as _bucket{le}, _sum and
// _count), a sample per scrape at the scrape's time. It is the storage the
// PromQL engine queries; Prometheus's own TSDB would pull its whole
// dependency tree into the test build.
type scrapeStore struct {
	series map[string]*storedSeries
}

type storedSeries struct {
	labels  labels.Labels
	samples []chunks.Sample
}

type floatSample struct {
	t int64
	f float64
}

func (s floatSample) T() int64                      { return s.t }
func (s floatSample) F() float64                    { return s.f }
func (s floatSample) H() *histogram.Histogram       { return nil }
func (s floatSample) FH() *histogram.FloatHistogram { return nil }
func (s floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s floatSample) Copy() chunks.Sample           { return s }
func (s floatSample) ST() int64                     { return 0 }

func newScrapeStore() *scrapeStore { return &scrapeStore{series: map[string]*storedSeries{}} }

// add parses one scrape in the text exposition format and stores its
// samples at time at.
func (st *scrapeStore) add(body []byte, at time.Time) error {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("parsing the scrape: %w", err)
	}
	t := at.UnixMilli()
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			base := map[string]string{}
			for _, lp := range m.GetLabel() {
				base[lp.GetName()] = lp.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				st.put(name, base, nil, t, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				st.put(name, base, nil, t, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				st.put(name, base, nil, t, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					st.put(name+"_bucket", base, map[string]string{"le": formatFloat(b.GetUpperBound())}, t, float64(b.GetCumulativeCount()))
				}
				st.put(name+"_bucket", base, map[string]string{"le": "+Inf"}, t, float64(h.GetSampleCount()))
				st.put(name+"_sum", base, nil, t, h.GetSampleSum())
				st.put(name+"_count", base, nil, t, float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					st.put(name, base, map[string]string{"quantile": formatFloat(q.GetQuantile())}, t, q.GetValue())
				}
				st.put(name+"_sum", base, nil, t, s.GetSampleSum())
				st.put(name+"_count", base, nil, t, float64(s.GetSampleCount()))
			}
		}
	}
	return nil
}

func formatFloat(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func (st *scrapeStore) put(name string, base, extra map[string]string, t int64, v float64) {
	b := labels.NewScratchBuilder(len(base) + len(extra) + 1)
	b.Add(labels.MetricName, name)
	for k, v := range base {
		b.Add(k, v)
	}
	for k, v := range extra {
		b.Add(k, v)
	}
	b.Sort()
	lset := b.Labels()
	key := lset.String()
	s := st.series[key]
	if s == nil {
		s = &storedSeries{labels: lset}
		st.series[key] = s
	}
	s.samples = append(s.samples, floatSample{t: t, f: v})
}

// names lists the metric names stored.
func (st *scrapeStore) names() []string {
	set := map[string]bool{}
	for _, s := range st.series {
		set[s.labels.Get(labels.MetricName)] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Querier implements storage.Queryable.
func (st *scrapeStore) Querier(mint, maxt int64) (storage.Querier, error) {
	return &scrapeQuerier{st: st, mint: mint, maxt: maxt}, nil
}

type scrapeQuerier struct {
	st         *scrapeStore
	mint, maxt int64
}

func (q *scrapeQuerier) Select(_ context.Context, _ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	var out []storage.Series
	for _, s := range q.st.series {
		if !matchAll(s.labels, ms) {
			continue
		}
		var in []chunks.Sample
		for _, smp := range s.samples {
			if smp.T() >= q.mint && smp.T() <= q.maxt {
				in = append(in, smp)
			}
		}
		if len(in) > 0 {
			out = append(out, storage.NewListSeries(s.labels, in))
		}
	}
	// The engine merges series in label order.
	sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].Labels(), out[j].Labels()) < 0 })
	return &seriesSet{series: out, i: -1}
}

func matchAll(l labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(l.Get(m.Name)) {
			return false
		}
	}
	return true
}

func (q *scrapeQuerier) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (q *scrapeQuerier) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (q *scrapeQuerier) Close() error { return nil }

type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }
