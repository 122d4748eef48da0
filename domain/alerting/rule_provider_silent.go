package alerting

import (
	"fmt"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// ProviderSilent: no authenticated delivery from a provider for Window.
const ProviderSilent Rule = "provider_silent"

// providerSilent reads, per provider, Since its connection and Last its
// last authenticated delivery (zero without one). A provider is silent for
// the window since the later of the two; the value is the silence in
// seconds.
var providerSilent = Def{
	Rule:      ProviderSilent,
	About:     "A provider has sent no authenticated delivery for the window (one alert per provider).",
	Threshold: 1,
	Window:    6 * time.Hour,
	Judge: func(r Reading) Verdict {
		since := r.Since
		if r.Last.After(since) {
			since = r.Last
		}
		silence := max(r.Now.Sub(since), 0)
		v := Verdict{Holds: silence >= r.Window, Value: int64(silence / time.Second),
			Summary: fmt.Sprintf("%s has sent no authenticated delivery for %s.", r.Provider, domain.FormatDuration(r.Window))}
		if r.Last.IsZero() {
			v.Summary = fmt.Sprintf("%s has sent no authenticated delivery since it was connected %s ago.", r.Provider, silence.Round(time.Second))
		}
		return v
	},
}
