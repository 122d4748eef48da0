package ingest

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/internal/tracing"
)

// A delivery's trace (internal/tracing) holds, below the webhook's span,
// the time it waited for its tenant's committer ("queue wait") and the
// commit of its group ("group commit": the group's size and rounds). A
// group is written by one pipelined batch, so the "sql batch" span is in
// the trace of the group's first delivery only; the group commit spans of
// the others link to that delivery's. Off, none of this costs anything.

// groupSpans are the group commit spans of a group's deliveries.
type groupSpans struct {
	spans []trace.Span
	lead  context.Context // the first delivery's group commit
}

// startGroupSpans opens a group commit span in each delivery's trace.
func startGroupSpans(live []*ingestJob) groupSpans {
	if !tracing.Enabled() {
		return groupSpans{}
	}
	g := groupSpans{spans: make([]trace.Span, len(live))}
	var lead trace.SpanContext
	for i, job := range live {
		var opts []trace.SpanStartOption
		if i > 0 && lead.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: lead}))
		}
		ctx, span := tracing.Start(job.ctx, "group commit", opts...)
		if i == 0 {
			g.lead, lead = ctx, span.SpanContext()
		}
		g.spans[i] = span
	}
	return g
}

// startSQL opens the span of the group's batch of statements, in the first
// delivery's trace.
func (g groupSpans) startSQL(statements int) trace.Span {
	if g.lead == nil {
		return trace.SpanFromContext(context.Background())
	}
	_, span := startBatchSpan(g.lead, statements)
	return span
}

// end closes the group commit spans with the group's size and rounds.
func (g groupSpans) end(size, rounds int, err error) {
	for i, span := range g.spans {
		if span.IsRecording() {
			span.SetAttributes(tracing.AttrGroupSize.Int(size), tracing.AttrGroupRound.Int(rounds),
				tracing.AttrLeader.Bool(i == 0))
			if err != nil {
				tracing.Fail(span, "rolled back")
			}
		}
		span.End()
	}
}

// startBatchSpan opens the span of one pipelined batch of statements.
func startBatchSpan(ctx context.Context, statements int) (context.Context, trace.Span) {
	if !tracing.Enabled() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return tracing.Start(ctx, "sql batch", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		tracing.AttrDBSystem.String("postgresql"), tracing.AttrDBOp.String("BATCH"), tracing.AttrBatchSize.Int(statements)))
}

// endBatchSpan closes a batch's span, failed when err is set.
func endBatchSpan(span trace.Span, err error) {
	if err != nil {
		tracing.Fail(span, "sql error")
	}
	span.End()
}
