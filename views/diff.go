package views

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// FieldDiff compares one top-level field of two snapshots, Old from the
// one before and New from the one after. Values are compact JSON text; a
// field absent on one side has its Missing flag set.
type FieldDiff struct {
	Field      string
	Old, New   string
	OldMissing bool
	NewMissing bool
}

// Changed reports whether the field differs between the two snapshots.
func (d FieldDiff) Changed() bool {
	return d.OldMissing != d.NewMissing || d.Old != d.New
}

// DiffFields compares the top-level fields of two JSON objects, in field
// name order, every field of either side included. A side that is not a
// JSON object (or nil) counts as having no fields.
func DiffFields(before, after json.RawMessage) []FieldDiff {
	a, b := topLevelFields(before), topLevelFields(after)
	names := make([]string, 0, len(a)+len(b))
	for k := range a {
		names = append(names, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	diffs := make([]FieldDiff, len(names))
	for i, k := range names {
		d := FieldDiff{Field: k}
		d.Old, d.OldMissing = fieldText(a, k)
		d.New, d.NewMissing = fieldText(b, k)
		diffs[i] = d
	}
	return diffs
}

// ChangedFields is DiffFields without the fields that are equal.
func ChangedFields(before, after json.RawMessage) []FieldDiff {
	return slices.DeleteFunc(DiffFields(before, after), func(d FieldDiff) bool { return !d.Changed() })
}

func fieldText(fields map[string]json.RawMessage, k string) (string, bool) {
	v, ok := fields[k]
	if !ok {
		return "", true
	}
	return CompactJSON(v), false
}

func topLevelFields(raw json.RawMessage) map[string]json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	return fields
}

// CompactJSON is raw as canonical compact JSON text (object keys sorted,
// numbers as sent), so that equal values have equal text. HTML characters
// are kept as they are: templ escapes them on output.
func CompactJSON(raw json.RawMessage) string {
	return encodeJSON(raw, "")
}

// IndentJSON is raw as indented JSON text for reading.
func IndentJSON(raw json.RawMessage) string {
	return encodeJSON(raw, "  ")
}

func encodeJSON(raw json.RawMessage, indent string) string {
	if len(raw) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
