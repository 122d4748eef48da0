// Package snapshot reads a record's snapshot for people: its display name
// (the first of its kind's display fields) and the fields a search
// matched, each as "field: value" with the matched words marked.
package snapshot

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/tidemark/tidemark/domain"
)

// DisplayFields are, by object type, the fields whose first present value
// names a record; fields separated by a space are joined ("firstname
// lastname"). Keys match case-insensitively, at the top level of the
// snapshot or inside its "properties" object (HubSpot). Other object
// types use DefaultDisplayFields.
var DisplayFields = map[string][]string{
	"contact": {"firstname lastname", "first_name last_name", "name", "email"},
	"company": {"name", "domain"},
	"account": {"name", "domain"},
	"deal":    {"dealname", "name"},
	"lead":    {"email", "name"},
}

// DefaultDisplayFields are the display fields of object types without
// their own.
var DefaultDisplayFields = []string{"name", "title", "email"}

// MaxNameRunes bounds a display name; a longer one is cut with "…".
const MaxNameRunes = 80

// DisplayName is the record's name for people: the first of its object
// type's display fields present in the snapshot, or "" when none is.
func DisplayName(objectType string, snap []byte) string {
	var obj map[string]any
	if decode(snap, &obj) != nil || obj == nil {
		return ""
	}
	fields, ok := DisplayFields[strings.ToLower(objectType)]
	if !ok {
		fields = DefaultDisplayFields
	}
	props, _ := lookup(obj, "properties").(map[string]any)
	for _, f := range fields {
		var parts []string
		for _, key := range strings.Fields(f) {
			v := text(lookup(obj, key))
			if v == "" && props != nil {
				v = text(lookup(props, key))
			}
			if v != "" {
				parts = append(parts, v)
			}
		}
		if len(parts) > 0 {
			return cut(strings.Join(parts, " "), MaxNameRunes)
		}
	}
	return ""
}

// Matches are the fields of the snapshot whose value holds a word of the
// search (websearch syntax: quoted phrases count by their words; -words
// and "or" are left out), sorted by field, at most max of them. Words
// compare as PostgreSQL's 'simple' search does: letters and digits, case
// folded.
func Matches(snap []byte, search string, max int) []domain.FieldMatch {
	words := searchWords(search)
	if len(words) == 0 {
		return nil
	}
	var v any
	if decode(snap, &v) != nil {
		return nil
	}
	var out []domain.FieldMatch
	walk("", v, func(field, value string) bool {
		if parts, ok := highlight(value, words); ok {
			out = append(out, domain.FieldMatch{Field: field, Parts: parts})
		}
		return len(out) < max
	})
	return out
}

// MaxValueRunes bounds the value of a match: a longer one is cut around
// its first matched word.
const MaxValueRunes = 120

func decode(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// lookup is obj's value of key, matched case-insensitively.
func lookup(obj map[string]any, key string) any {
	if v, ok := obj[key]; ok {
		return v
	}
	for k, v := range obj {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

func text(v any) string {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case json.Number:
		return v.String()
	}
	return ""
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// walk calls fn with every string value under v and its dotted path, keys
// in order, until fn returns false.
func walk(path string, v any, fn func(field, value string) bool) bool {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if !walk(p, v[k], fn) {
				return false
			}
		}
	case []any:
		for i, e := range v {
			if !walk(path+"["+strconv.Itoa(i)+"]", e, fn) {
				return false
			}
		}
	case string:
		return fn(path, v)
	}
	return true
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// searchWords are the words a search looks for, case folded.
func searchWords(search string) map[string]bool {
	words := map[string]bool{}
	inQuote := false
	for _, tok := range strings.FieldsFunc(search, func(r rune) bool {
		if r == '"' {
			inQuote = !inQuote
			return true
		}
		return unicode.IsSpace(r)
	}) {
		if strings.HasPrefix(tok, "-") || strings.EqualFold(tok, "or") {
			continue
		}
		for _, w := range strings.FieldsFunc(tok, func(r rune) bool { return !isWordRune(r) }) {
			words[strings.ToLower(w)] = true
		}
	}
	return words
}

// highlight cuts value into the words of the search and the text between
// them; ok reports that some word matched.
func highlight(value string, words map[string]bool) (parts []domain.HighlightPart, ok bool) {
	runes := []rune(value)
	start := 0
	first := -1
	var plain []rune
	flush := func() {
		if len(plain) > 0 {
			parts = append(parts, domain.HighlightPart{Text: string(plain)})
			plain = nil
		}
	}
	for i := 0; i < len(runes); {
		if !isWordRune(runes[i]) {
			plain = append(plain, runes[i])
			i++
			continue
		}
		start = i
		for i < len(runes) && isWordRune(runes[i]) {
			i++
		}
		w := runes[start:i]
		if words[strings.ToLower(string(w))] {
			if first < 0 {
				first = start
			}
			flush()
			parts = append(parts, domain.HighlightPart{Text: string(w), Matched: true})
			ok = true
		} else {
			plain = append(plain, w...)
		}
	}
	flush()
	if !ok {
		return nil, false
	}
	if len(runes) > MaxValueRunes {
		parts = around(parts, first)
	}
	return parts, true
}

// around shortens a long value's parts to about MaxValueRunes runes
// starting a little before the first match (at rune first).
func around(parts []domain.HighlightPart, first int) []domain.HighlightPart {
	from := max(0, first-20)
	var out []domain.HighlightPart
	pos, budget := 0, MaxValueRunes
	if from > 0 {
		out = append(out, domain.HighlightPart{Text: "…"})
	}
	for _, p := range parts {
		r := []rune(p.Text)
		end := pos + len(r)
		if end <= from || budget <= 0 {
			pos = end
			continue
		}
		if pos < from {
			r = r[from-pos:]
		}
		if len(r) > budget {
			r = append(r[:budget], '…')
		}
		budget -= len(r)
		out = append(out, domain.HighlightPart{Text: string(r), Matched: p.Matched})
		pos = end
	}
	return out
}

// HeadlineParts splits a headline at its delimiters, for a view to escape
// each part and mark the matched ones.
func HeadlineParts(headline string) []domain.HighlightPart {
	var parts []domain.HighlightPart
	matched := false
	for headline != "" {
		stop := domain.HighlightStart
		if matched {
			stop = domain.HighlightStop
		}
		i := strings.IndexRune(headline, stop)
		if i < 0 {
			i = len(headline)
		}
		if i > 0 {
			parts = append(parts, domain.HighlightPart{Text: headline[:i], Matched: matched})
		}
		if i == len(headline) {
			break
		}
		headline = headline[i+1:]
		matched = !matched
	}
	return parts
}

// TestRecordID is the object id of the record a console test event writes
// ("tidemark-test"; Shippo's is "tidemark:tidemark-test").
const TestRecordID = "tidemark-test"

// IsTestRecord reports whether objectID is a console test event's record.
func IsTestRecord(objectID string) bool {
	return objectID == TestRecordID || strings.HasSuffix(objectID, ":"+TestRecordID)
}
