package queue

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// fill sets every field reachable from v to a value that is not its zero
// value, so that a field the envelope loses shows up as a difference.
func fill(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(time.Date(2026, 11, 29, 10, 0, *n, 123456789, time.UTC)))
		return
	case json.RawMessage:
		v.Set(reflect.ValueOf(json.RawMessage(`{"k":` + string(rune('0'+*n%10)) + `}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)))
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Int16:
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{0, 1, byte(*n), 255})
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), n)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, n)
		fill(t, e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), n)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				t.Fatalf("%s.%s is unexported: the envelope would lose it", v.Type(), v.Type().Field(i).Name)
			}
			fill(t, v.Field(i), n)
		}
	default:
		t.Fatalf("fill: no value for %s", v.Type())
	}
}

// TestEnvelopeRoundTrip: every field of a queued delivery (the domain's
// Delivery and Event, whatever fields they gain) reaches the worker as the
// receiver had it.
func TestEnvelopeRoundTrip(t *testing.T) {
	t.Parallel()
	var qd domain.QueuedDelivery
	n := 0
	fill(t, reflect.ValueOf(&qd).Elem(), &n)
	qd.Identity = "" // the message id header, not the body
	data, err := encode(qd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, qd) {
		t.Errorf("round trip changed the delivery:\n got %+v\nwant %+v", got, qd)
	}

	if _, err := decode([]byte(`{"v":2}`)); err == nil || err.Error() != errVersion(2).Error() {
		t.Errorf("a newer version decodes as %v, want %v", err, errVersion(2))
	}
	if _, err := decode([]byte(`not json`)); err == nil {
		t.Error("garbage decodes")
	}
}
