package pubsubtest

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
)

// Change is a change event to publish, as Change Data Capture makes one
// (Change Data Capture Developer Guide: "Change Event Body Fields",
// "ChangeEventHeader Fields", "Gap Events", "Overflow Events").
type Change struct {
	Entity    string // Contact or Invoice__c
	Type      string // CREATE, UPDATE, DELETE, UNDELETE, GAP_CREATE... GAP_OVERFLOW
	RecordIDs []string
	Commit    time.Time
	// Fields are the values set, by schema path (Email,
	// Name.FirstName), as Avro values: string, bool, float64, int32 days
	// for a date, int64 milliseconds for a dateTime.
	Fields map[string]any
	Nulled []string // paths set to null (an UPDATE)
	Diff   []string // paths sent as a diff (an UPDATE of a long text)
	// Sequence and TransactionKey default to 1 and a key of the commit.
	Sequence       int
	TransactionKey string
}

// AddChange encodes the change with its entity's schema and appends it to
// the stream, returning its replay id. On an UPDATE, changedFields marks
// Fields, Nulled and Diff, and nulledFields and diffFields theirs; a part
// of a compound field is marked in an element N-0x... for the compound at
// position N, whose bit is set in the first element too. A gap or
// overflow event carries the header alone; an overflow no record ids.
func (s *Server) AddChange(c Change) []byte {
	e, ok := s.entities[c.Entity]
	if !ok {
		panic("pubsubtest: no schema for entity " + c.Entity)
	}
	rs := e.schema.(*avro.RecordSchema)
	if c.Sequence == 0 {
		c.Sequence = 1
	}
	if c.TransactionKey == "" {
		c.TransactionKey = fmt.Sprintf("tx-%d", c.Commit.UnixMilli())
	}
	ids := c.RecordIDs
	if c.Type == "GAP_OVERFLOW" {
		ids = nil
	}
	var changed, nulled, diff []string
	if c.Type == "UPDATE" {
		paths := slices.Concat(slices.Collect(maps.Keys(c.Fields)), c.Nulled, c.Diff)
		changed, nulled, diff = bitmap(rs, paths), bitmap(rs, c.Nulled), bitmap(rs, c.Diff)
	}
	record := map[string]any{"ChangeEventHeader": map[string]any{
		"entityName": c.Entity, "recordIds": orEmpty(ids), "changeType": c.Type, "changeOrigin": "com/salesforce/api/soap/62.0;client=fake",
		"transactionKey": c.TransactionKey, "sequenceNumber": c.Sequence, "commitTimestamp": c.Commit.UnixMilli(),
		"commitNumber": c.Commit.UnixNano(), "commitUser": "005000000000001AAA",
		"nulledFields": orEmpty(nulled), "diffFields": orEmpty(diff), "changedFields": orEmpty(changed),
	}}
	if !strings.HasPrefix(c.Type, "GAP_") {
		compounds := map[string]map[string]any{}
		for path, v := range c.Fields {
			if parent, child, ok := strings.Cut(path, "."); ok {
				if compounds[parent] == nil {
					compounds[parent] = map[string]any{}
				}
				compounds[parent][child] = v
				continue
			}
			record[path] = v
		}
		// A record in a union is written as {full name: value}, the
		// branch it takes.
		for parent, parts := range compounds {
			i := slices.IndexFunc(rs.Fields(), func(f *avro.Field) bool { return f.Name() == parent })
			record[parent] = map[string]any{compoundOf(rs.Fields()[i]).FullName(): parts}
		}
	}
	payload, err := avro.Marshal(rs, record)
	if err != nil {
		panic("pubsubtest: encoding a " + c.Entity + " change: " + err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, stored{entity: c.Entity, schemaID: e.schemaID, payload: payload})
	close(s.changed)
	s.changed = make(chan struct{})
	return replayID(len(s.log) - 1)
}

// bitmap encodes paths as "Event Deserialization Considerations"
// documents: bit i of the first element for the schema's field i, an
// element N-0x... for the parts of the compound field at N.
func bitmap(rs *avro.RecordSchema, paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	top := new(big.Int)
	nested := map[int]*big.Int{}
	for _, path := range paths {
		parent, child, isPart := strings.Cut(path, ".")
		i := slices.IndexFunc(rs.Fields(), func(f *avro.Field) bool { return f.Name() == parent })
		if i < 0 {
			panic("pubsubtest: no field " + path)
		}
		top.SetBit(top, i, 1)
		if !isPart {
			continue
		}
		parts := compoundOf(rs.Fields()[i]).Fields()
		j := slices.IndexFunc(parts, func(f *avro.Field) bool { return f.Name() == child })
		if j < 0 {
			panic("pubsubtest: no field " + path)
		}
		if nested[i] == nil {
			nested[i] = new(big.Int)
		}
		nested[i].SetBit(nested[i], j, 1)
	}
	out := []string{fmt.Sprintf("0x%X", top)}
	for _, i := range slices.Sorted(maps.Keys(nested)) {
		out = append(out, fmt.Sprintf("%d-0x%X", i, nested[i]))
	}
	return out
}

// compoundOf is the record of a compound field: the branch of its union
// with null.
func compoundOf(f *avro.Field) *avro.RecordSchema {
	for _, t := range f.Type().(*avro.UnionSchema).Types() {
		if r, ok := t.(*avro.RecordSchema); ok {
			return r
		}
	}
	panic("pubsubtest: " + f.Name() + " is not a compound field")
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
