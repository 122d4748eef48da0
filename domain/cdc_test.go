package domain

import (
	"testing"
	"time"
)

// TestCDCConfigCheck: the three forms of channel, the default one when
// none is given; a Pub/Sub address is host:port.
func TestCDCConfigCheck(t *testing.T) {
	t.Parallel()
	for channel, want := range map[string]string{"": DefaultCDCChannel, " /data/ChangeEvents ": DefaultCDCChannel,
		"/data/Sales__chn": "/data/Sales__chn", "/data/ContactChangeEvent": "/data/ContactChangeEvent",
		"/data/Invoice__ChangeEvent": "/data/Invoice__ChangeEvent"} {
		if c, err := (CDCConfig{Channel: channel}).Check(); err != nil || c.Channel != want {
			t.Errorf("channel %q: %q, %v, want %q", channel, c.Channel, err, want)
		}
	}
	for _, bad := range []CDCConfig{{Channel: "/data/Contact"}, {Channel: "/event/Thing__e"}, {Channel: "/data/../ChangeEvents"},
		{PubSubAddress: "api.pubsub.salesforce.com"}, {PubSubAddress: "https://h:7443"}, {PubSubAddress: ":7443"}, {PubSubAddress: "h:0"}} {
		if _, err := bad.Check(); ErrorCode(err) != EINVALID {
			t.Errorf("%+v: %v, want EINVALID", bad, err)
		}
	}
	if c, err := (CDCConfig{PubSubAddress: "127.0.0.1:7443"}).Check(); err != nil || c.Address() != "127.0.0.1:7443" {
		t.Errorf("an address: %q, %v", c.Address(), err)
	}
}

// TestCDCStreamRates: the rate slides over the previous minute's count;
// the position's age and the subscriber are read at a time.
func TestCDCStreamRates(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 7, 14, 0, 0, 0, time.UTC)
	s := CDCStream{MinuteStart: start, MinuteEvents: 30, PreviousMinuteEvents: 60}
	for at, want := range map[time.Duration]float64{0: 90, 30 * time.Second: 60, time.Minute: 30, 90 * time.Second: 15, 2 * time.Minute: 0} {
		if got := s.EventsPerMinute(start.Add(at)); got != want {
			t.Errorf("at +%s: %v events per minute, want %v", at, got, want)
		}
	}
	if _, ok := s.ReplayAge(start); ok {
		t.Error("an age before the first event")
	}
	s.CommittedAt, s.LeasedBy, s.LeaseUntil = start, "node-1", start.Add(time.Minute)
	if age, ok := s.ReplayAge(start.Add(time.Hour)); !ok || age != time.Hour {
		t.Errorf("age %s", age)
	}
	if !s.Subscribed(start) || s.Subscribed(start.Add(time.Minute)) {
		t.Error("subscribed while the lease runs, not after")
	}
}
