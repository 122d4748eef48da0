package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/internal/provider"
)

// cdcFlags are provider update's flags that turn a Salesforce provider's
// Change Data Capture on or off and set its stream up.
type cdcFlags struct {
	fs                *flag.FlagSet
	on, off           *bool
	channel, pubsubTo *string
}

// changeDataCaptureFlags declares the Change Data Capture flags on fs.
func changeDataCaptureFlags(fs *flag.FlagSet) cdcFlags {
	return cdcFlags{fs: fs,
		on: fs.Bool("cdc", false, "Salesforce: turn Change Data Capture on (needs the connected app's credentials): "+
			"subscribe to the org's change events over the Pub/Sub API"),
		off: fs.Bool("no-cdc", false, "Salesforce: turn Change Data Capture off; its replay position is kept"),
		channel: fs.String("cdc-channel", "", "with --cdc: the channel, "+domain.DefaultCDCChannel+" (the default), "+
			"/data/<Name>__chn or /data/<Entity>ChangeEvent"),
		pubsubTo: fs.String("pubsub-url", "", "with --cdc: the Pub/Sub API's host:port instead of "+domain.DefaultPubSubAddress+
			" (tests); a private address only with --allow-private"),
	}
}

// given reports whether the command line changes Change Data Capture.
func (c cdcFlags) given() bool {
	return *c.on || *c.off || flagSet(c.fs, "cdc-channel") || flagSet(c.fs, "pubsub-url")
}

// check refuses flags that contradict each other or go with nothing.
func (c cdcFlags) check() error {
	switch {
	case *c.on && *c.off:
		return errors.New("provider update: give --cdc or --no-cdc, not both")
	case !*c.on && (flagSet(c.fs, "cdc-channel") || flagSet(c.fs, "pubsub-url")):
		return errors.New("provider update: --cdc-channel and --pubsub-url go with --cdc")
	}
	return nil
}

// updateCDC turns p's Change Data Capture on or off as the flags say,
// keeping what they do not change, and says what the stream is now.
func (e cliEnv) updateCDC(ctx context.Context, s cliStore, t domain.Tenant, p domain.ProviderSummary, c cdcFlags, allowPrivate bool) error {
	if !provider.ChangeDataCapture(p.Kind) {
		return domain.Errorf(domain.EINVALID, "provider update: %s is a %s provider; Change Data Capture is Salesforce's", p.Name, p.Kind)
	}
	cur, _, err := s.CDCStream(ctx, t.ID, p.ID)
	if err != nil {
		return err
	}
	cfg := cur.CDCConfig
	cfg.Enabled = *c.on
	if flagSet(c.fs, "cdc-channel") {
		cfg.Channel = *c.channel
	}
	if flagSet(c.fs, "pubsub-url") {
		cfg.PubSubAddress, cfg.AllowPrivate = *c.pubsubTo, allowPrivate
	}
	if cfg, err = cfg.Check(); err != nil {
		return fmt.Errorf("provider update: %s", domain.ErrorMessage(err))
	}
	if cfg.PubSubAddress != "" && cfg.Enabled {
		_, err := egress.CheckURL(ctx, "https://"+cfg.PubSubAddress, cfg.AllowPrivate)
		if errors.Is(err, egress.ErrPrivate) {
			return fmt.Errorf("provider update: --pubsub-url: %s; pass --allow-private if it is a test server", refusal(err))
		}
		if err != nil {
			return fmt.Errorf("provider update: --pubsub-url: %s", refusal(err))
		}
	}
	st, err := s.SetCDC(ctx, t.ID, p.ID, cfg)
	if err != nil {
		return err
	}
	if !st.Enabled {
		fmt.Fprintf(e.stdout, "Change Data Capture off for %s/%s\n", t.Slug, p.Name)
		return nil
	}
	fmt.Fprintf(e.stdout, "Change Data Capture on for %s/%s: channel %s at %s\n", t.Slug, p.Name, st.Channel, st.Address())
	return nil
}
