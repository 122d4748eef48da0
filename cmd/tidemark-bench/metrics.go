package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Names in the server's /metrics that the bench reads.
const (
	// groupSizeMetric is the histogram of deliveries per committed group;
	// servers without group commit do not have it.
	groupSizeMetric = "tidemark_ingest_group_size"
	eventsMetric    = "tidemark_events_total"
	// busyMetric counts the 503s of a tenant holding its share of the pool.
	busyMetric = "tidemark_tenant_busy_total"
)

// metricSample is one line of the Prometheus text format.
type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

// metrics is a scrape of /metrics.
type metrics []metricSample

// sum adds the samples of name whose labels include match; ok is false
// when there is none.
func (m metrics) sum(name string, match map[string]string) (total float64, ok bool) {
	for _, s := range m {
		if s.name != name || !hasLabels(s.labels, match) {
			continue
		}
		total += s.value
		ok = true
	}
	return total, ok
}

func hasLabels(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// since is how much the samples of name matching match grew from before.
func (m metrics) since(before metrics, name string, match map[string]string) float64 {
	now, _ := m.sum(name, match)
	was, _ := before.sum(name, match)
	return now - was
}

// groupStats is a reading of the group-size histogram.
type groupStats struct {
	sum, count float64
	ok         bool // the server has the histogram
}

func (m metrics) groups() groupStats {
	sum, okSum := m.sum(groupSizeMetric+"_sum", nil)
	count, okCount := m.sum(groupSizeMetric+"_count", nil)
	return groupStats{sum: sum, count: count, ok: okSum && okCount}
}

// meanSince is the mean group size of the groups committed between before
// and g; ok is false without the histogram or without a group.
func (g groupStats) meanSince(before groupStats) (mean float64, ok bool) {
	groups := g.count - before.count
	if !g.ok || !before.ok || groups <= 0 {
		return 0, false
	}
	return (g.sum - before.sum) / groups, true
}

// parseMetrics reads the Prometheus text exposition format. Comments and
// blank lines are skipped; a line it cannot read is an error.
func parseMetrics(r io.Reader) (metrics, error) {
	var out metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		s, err := parseSample(text)
		if err != nil {
			return nil, fmt.Errorf("/metrics line %d: %w: %.200q", line, err, text)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseSample reads `name{label="value",...} value [timestamp]`.
func parseSample(text string) (metricSample, error) {
	s := metricSample{labels: map[string]string{}}
	end := strings.IndexAny(text, "{ \t")
	if end <= 0 {
		return s, fmt.Errorf("no value")
	}
	s.name, text = text[:end], text[end:]
	if text[0] == '{' {
		var err error
		if text, err = parseLabels(text[1:], s.labels); err != nil {
			return s, err
		}
	}
	fields := strings.Fields(text)
	if len(fields) == 0 || len(fields) > 2 {
		return s, fmt.Errorf("expected a value and an optional timestamp")
	}
	// ParseFloat reads NaN, +Inf and -Inf too.
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, err
	}
	s.value = v
	return s, nil
}

// parseLabels reads `a="x",b="y\"z"}` into labels and returns what follows
// the closing brace.
func parseLabels(text string, labels map[string]string) (string, error) {
	for {
		text = strings.TrimLeft(text, " \t,")
		if strings.HasPrefix(text, "}") {
			return text[1:], nil
		}
		eq := strings.IndexByte(text, '=')
		if eq <= 0 || len(text) < eq+2 || text[eq+1] != '"' {
			return "", fmt.Errorf("malformed labels")
		}
		name := strings.TrimSpace(text[:eq])
		var value strings.Builder
		i := eq + 2
		for ; i < len(text) && text[i] != '"'; i++ {
			if text[i] == '\\' && i+1 < len(text) {
				i++
				if text[i] == 'n' {
					value.WriteByte('\n')
					continue
				}
			}
			value.WriteByte(text[i])
		}
		if i == len(text) {
			return "", fmt.Errorf("unterminated label value")
		}
		labels[name] = value.String()
		text = text[i+1:]
	}
}

// scrapeMetrics reads the server's /metrics.
func (p *serverProcess) scrapeMetrics(ctx context.Context) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}
