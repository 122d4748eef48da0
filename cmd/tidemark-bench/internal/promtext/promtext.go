// Package promtext reads a scrape of a server's /metrics in the Prometheus
// text exposition format, and sums, compares and averages its samples.
package promtext

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Sample is one line of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics is a scrape of /metrics.
type Metrics []Sample

// Sum adds the samples of name whose labels include match; ok is false
// when there is none.
func (m Metrics) Sum(name string, match map[string]string) (total float64, ok bool) {
	for _, s := range m {
		if s.Name != name || !hasLabels(s.Labels, match) {
			continue
		}
		total += s.Value
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

// Since is how much the samples of name matching match grew from before.
func (m Metrics) Since(before Metrics, name string, match map[string]string) float64 {
	now, _ := m.Sum(name, match)
	was, _ := before.Sum(name, match)
	return now - was
}

// Histogram is a reading of a histogram's sum and count.
type Histogram struct {
	sum, count float64
	ok         bool // the server has the histogram
}

// Histogram reads the histogram name.
func (m Metrics) Histogram(name string) Histogram {
	sum, okSum := m.Sum(name+"_sum", nil)
	count, okCount := m.Sum(name+"_count", nil)
	return Histogram{sum: sum, count: count, ok: okSum && okCount}
}

// MeanSince is the mean of the observations made between before and h; ok
// is false without the histogram or without an observation.
func (h Histogram) MeanSince(before Histogram) (mean float64, ok bool) {
	observations := h.count - before.count
	if !h.ok || !before.ok || observations <= 0 {
		return 0, false
	}
	return (h.sum - before.sum) / observations, true
}

// Parse reads the Prometheus text exposition format. Comments and blank
// lines are skipped; a line it cannot read is an error.
func Parse(r io.Reader) (Metrics, error) {
	var out Metrics
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
func parseSample(text string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	end := strings.IndexAny(text, "{ \t")
	if end <= 0 {
		return s, fmt.Errorf("no value")
	}
	s.Name, text = text[:end], text[end:]
	if text[0] == '{' {
		var err error
		if text, err = parseLabels(text[1:], s.Labels); err != nil {
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
	s.Value = v
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
