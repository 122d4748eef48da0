package pubsub

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
)

// The change types of ChangeEventHeader.changeType (Change Data Capture
// Developer Guide, "ChangeEventHeader Fields"; gap and overflow events:
// "Gap Events" and "Overflow Events").
const (
	ChangeCreate      = "CREATE"
	ChangeUpdate      = "UPDATE"
	ChangeDelete      = "DELETE"
	ChangeUndelete    = "UNDELETE"
	ChangeGapCreate   = "GAP_CREATE"
	ChangeGapUpdate   = "GAP_UPDATE"
	ChangeGapDelete   = "GAP_DELETE"
	ChangeGapUndelete = "GAP_UNDELETE"
	ChangeGapOverflow = "GAP_OVERFLOW"
)

// Header is a change event's ChangeEventHeader. The bitmap fields hold
// field names, decoded against the event's schema: a top-level field by
// its name, a field of a compound one as Parent.Child (Name.FirstName).
type Header struct {
	EntityName      string
	RecordIDs       []string
	ChangeType      string
	ChangeOrigin    string
	TransactionKey  string
	SequenceNumber  int64
	CommitTimestamp int64 // milliseconds since 1970
	CommitNumber    int64
	CommitUser      string
	NulledFields    []string
	DiffFields      []string
	ChangedFields   []string
}

// ChangeEvent is one decoded event of a Change Data Capture stream.
type ChangeEvent struct {
	ReplayID []byte
	SchemaID string
	Header   Header
	// Fields are the record's fields the event sets, by their sObject
	// names (FirstName, MailingCity: a compound field's parts as an
	// outbound message names them), each as an outbound message writes
	// it; nil for a field set to null. An UPDATE has its changed fields
	// (nulled ones included) but not its diffFields, whose value is a
	// diff; CREATE and UNDELETE have every field with a value.
	Fields   map[string]*string
	Gap      bool // a GAP_* event: the header only, the records must be read again
	Overflow bool // GAP_OVERFLOW: too many changes in one transaction, no record ids
}

// decoder decodes the payloads written with one schema.
type decoder struct {
	schema *avro.RecordSchema
}

func newDecoder(schemaJSON string) (decoder, error) {
	// A cache of its own: two schemas may name their records alike
	// (ChangeEventHeader) with other fields.
	s, err := avro.ParseWithCache(schemaJSON, "", &avro.SchemaCache{})
	if err != nil {
		return decoder{}, fmt.Errorf("pubsub: the schema is not Avro: %w", err)
	}
	rs, ok := s.(*avro.RecordSchema)
	if !ok {
		return decoder{}, fmt.Errorf("pubsub: the schema is a %s, not a record", s.Type())
	}
	return decoder{schema: rs}, nil
}

// decode reads one payload. It fails on a payload that does not match the
// schema or whose header lacks what every change event has.
func (d decoder) decode(payload []byte) (ChangeEvent, error) {
	var record map[string]any
	if err := avro.Unmarshal(d.schema, payload, &record); err != nil {
		return ChangeEvent{}, fmt.Errorf("pubsub: the payload does not match its schema: %w", err)
	}
	raw, _ := unwrap(record["ChangeEventHeader"]).(map[string]any)
	if raw == nil {
		return ChangeEvent{}, errors.New("pubsub: the event has no ChangeEventHeader")
	}
	h := Header{
		EntityName:      text(raw["entityName"]),
		RecordIDs:       stringList(raw["recordIds"]),
		ChangeType:      text(raw["changeType"]),
		ChangeOrigin:    text(raw["changeOrigin"]),
		TransactionKey:  text(raw["transactionKey"]),
		SequenceNumber:  integer(raw["sequenceNumber"]),
		CommitTimestamp: integer(raw["commitTimestamp"]),
		CommitNumber:    integer(raw["commitNumber"]),
		CommitUser:      text(raw["commitUser"]),
	}
	if h.EntityName == "" || h.ChangeType == "" || h.CommitTimestamp <= 0 {
		return ChangeEvent{}, errors.New("pubsub: the ChangeEventHeader lacks entityName, changeType or commitTimestamp")
	}
	var err error
	var changed, nulled, diff []fieldRef
	if changed, err = d.bitmap(stringList(raw["changedFields"])); err == nil {
		if nulled, err = d.bitmap(stringList(raw["nulledFields"])); err == nil {
			diff, err = d.bitmap(stringList(raw["diffFields"]))
		}
	}
	if err != nil {
		return ChangeEvent{}, err
	}
	h.ChangedFields, h.NulledFields, h.DiffFields = names(changed), names(nulled), names(diff)

	ev := ChangeEvent{Header: h, Fields: map[string]*string{}}
	switch h.ChangeType {
	case ChangeGapCreate, ChangeGapUpdate, ChangeGapDelete, ChangeGapUndelete:
		ev.Gap = true
	case ChangeGapOverflow:
		ev.Gap, ev.Overflow = true, true
	case ChangeUpdate:
		skip := map[string]bool{}
		for _, f := range diff {
			skip[f.path()] = true
		}
		for _, f := range append(changed, nulled...) {
			if !skip[f.path()] {
				ev.Fields[f.recordName()] = d.value(record, f)
			}
		}
		for _, f := range nulled {
			ev.Fields[f.recordName()] = nil
		}
	case ChangeCreate, ChangeUndelete:
		for _, f := range d.all() {
			if v := d.value(record, f); v != nil {
				ev.Fields[f.recordName()] = v
			}
		}
	}
	return ev, nil
}

// fieldRef is a field of the schema: a top-level one (child nil) or a part
// of a compound one.
type fieldRef struct {
	top   *avro.Field
	child *avro.Field
}

func (f fieldRef) path() string {
	if f.child == nil {
		return f.top.Name()
	}
	return f.top.Name() + "." + f.child.Name()
}

// recordName is the field's name on the sObject, as an outbound message
// and the REST API write it: a person name's parts keep theirs (FirstName),
// an address's take its prefix (MailingAddress.City is MailingCity), any
// other compound's parts are Parent.Child.
func (f fieldRef) recordName() string {
	switch {
	case f.child == nil:
		return f.top.Name()
	case f.top.Name() == "Name":
		return f.child.Name()
	case strings.HasSuffix(f.top.Name(), "Address"):
		return strings.TrimSuffix(f.top.Name(), "Address") + f.child.Name()
	}
	return f.path()
}

func names(fs []fieldRef) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.path())
	}
	return out
}

// bitmap decodes a bitmap field, as "Event Deserialization
// Considerations" (Pub/Sub API Developer Guide) documents it and
// forcedotcom/pub-sub-api's ChangeEventHeaderUtility.py reads it: the
// first element, 0x..., is a hexadecimal number whose bit i (counted from
// the least significant) stands for the schema's field i; an element
// N-0x... does the same for the fields of the compound field at position
// N. A compound field marked in the first element without an element of
// its own stands for all its parts.
func (d decoder) bitmap(elements []string) ([]fieldRef, error) {
	top := d.schema.Fields()
	var out []fieldRef
	nested := map[int]bool{}
	for _, el := range elements {
		if pos, bits, ok := strings.Cut(el, "-"); ok {
			n, err := strconv.Atoi(pos)
			if err != nil || n < 0 || n >= len(top) {
				return nil, fmt.Errorf("pubsub: bitmap element %.40q names no field of the schema", el)
			}
			parts := compound(top[n])
			if parts == nil {
				return nil, fmt.Errorf("pubsub: bitmap element %.40q names %s, which is not a compound field", el, top[n].Name())
			}
			set, err := bitsOf(bits, len(parts))
			if err != nil {
				return nil, err
			}
			for _, i := range set {
				out = append(out, fieldRef{top: top[n], child: parts[i]})
			}
			nested[n] = true
		}
	}
	for _, el := range elements {
		if strings.Contains(el, "-") {
			continue
		}
		set, err := bitsOf(el, len(top))
		if err != nil {
			return nil, err
		}
		for _, i := range set {
			parts := compound(top[i])
			switch {
			case parts == nil:
				out = append(out, fieldRef{top: top[i]})
			case !nested[i]:
				for _, p := range parts {
					out = append(out, fieldRef{top: top[i], child: p})
				}
			}
		}
	}
	return out, nil
}

// bitsOf is the positions of the bits set in 0x-prefixed hexadecimal
// text, each below size.
func bitsOf(hex string, size int) ([]int, error) {
	digits, ok := strings.CutPrefix(hex, "0x")
	n, valid := new(big.Int).SetString(digits, 16)
	if !ok || !valid {
		return nil, fmt.Errorf("pubsub: bitmap element %.40q is not 0x and hexadecimal digits", hex)
	}
	if n.BitLen() > size {
		return nil, fmt.Errorf("pubsub: bitmap %.40q marks field %d; the schema has %d", hex, n.BitLen()-1, size)
	}
	var set []int
	for i := range n.BitLen() {
		if n.Bit(i) == 1 {
			set = append(set, i)
		}
	}
	return set, nil
}

// compound is the parts of a compound field (a record, alone or in a union
// with null), or nil.
func compound(f *avro.Field) []*avro.Field {
	if r := recordOf(f.Type()); r != nil {
		return r.Fields()
	}
	return nil
}

func recordOf(s avro.Schema) *avro.RecordSchema {
	switch s := s.(type) {
	case *avro.RecordSchema:
		return s
	case *avro.UnionSchema:
		for _, t := range s.Types() {
			if r, ok := t.(*avro.RecordSchema); ok {
				return r
			}
		}
	}
	return nil
}

// all is every record field of the schema, a compound's parts one by one.
func (d decoder) all() []fieldRef {
	var out []fieldRef
	for _, f := range d.schema.Fields()[1:] { // after ChangeEventHeader
		if parts := compound(f); parts != nil {
			for _, p := range parts {
				out = append(out, fieldRef{top: f, child: p})
			}
			continue
		}
		out = append(out, fieldRef{top: f})
	}
	return out
}

// value is the field's value in record as an outbound message writes it,
// or nil when it is null.
func (d decoder) value(record map[string]any, f fieldRef) *string {
	v := unwrap(record[f.top.Name()])
	field := f.top
	if f.child != nil {
		parts, _ := v.(map[string]any)
		v, field = unwrap(parts[f.child.Name()]), f.child
	}
	if v == nil {
		return nil
	}
	s := render(v, field.Doc())
	return &s
}

// render writes a value as an outbound message (SOAP) does. Salesforce's
// schemas mark a field's type in its doc ("Data:DateTime"): a dateTime
// is milliseconds since 1970 and written 2006-01-02T15:04:05.000Z, a date
// is days since 1970 and written 2006-01-02 ("Event Deserialization
// Considerations": date fields are in Epoch time).
func render(v any, doc string) string {
	kind := strings.TrimPrefix(doc, "Data:")
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	n := integer(v)
	switch kind {
	case "DateTime":
		return time.UnixMilli(n).UTC().Format("2006-01-02T15:04:05.000Z")
	case "Date":
		return time.Unix(n*86400, 0).UTC().Format(time.DateOnly)
	}
	return strconv.FormatInt(n, 10)
}

// unwrap is the value of a union when the decoder kept its branch's name
// ({"string": "x"}), else v.
func unwrap(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for k, inner := range m {
			switch k {
			case "string", "long", "int", "boolean", "double", "float", "bytes":
				return inner
			}
			if _, isRecord := inner.(map[string]any); isRecord {
				return inner
			}
		}
	}
	return v
}

func text(v any) string {
	s, _ := unwrap(v).(string)
	return s
}

func integer(v any) int64 {
	switch v := unwrap(v).(type) {
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

func stringList(v any) []string {
	list, _ := unwrap(v).([]any)
	out := make([]string, 0, len(list))
	for _, item := range list {
		out = append(out, text(item))
	}
	return out
}
