package hook

import (
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

// A refusal is a step's answer to a delivery it does not take further.
// refuse answers every one, so that a step only says what went wrong.
type refusal struct {
	status int    // the answer's status
	msg    string // and its error message
	// err, when set, is answered by httpx.Fail instead (which logs what a
	// 500 or a 503 needs): its status is the error's.
	err error

	// kind is the provider kind /metrics counts the answer under
	// ("unknown" before the endpoint is found); "" counts nothing.
	kind string
	// over names the refusal budget that ran out ("address", "provider").
	over       string
	retryAfter string // the Retry-After header, when set

	// A refused delivery (its endpoint found) is kept with its verdict and
	// body, and spends the budgets: see logRefused.
	delivery bool
	verdict  string
	body     []byte
}

// refused is the refusal of in for msg, answered with status unless the
// budgets ran out.
func (in *inbound) refused(status int, verdict string, body []byte, msg string) *refusal {
	return &refusal{status: status, msg: msg, kind: in.p.Kind, delivery: true, verdict: verdict, body: body}
}

// tooMany is the 429 of a client past its refusal budget before the
// endpoint is known.
func tooMany(over string, wait time.Duration) *refusal {
	return &refusal{status: http.StatusTooManyRequests, msg: tooManyMessage(over), kind: "unknown", over: over,
		retryAfter: httpx.RetryAfter(wait)}
}

// tenantBusy is the 503 of a delivery whose tenant already holds its share
// of the ingest pool: the other tenants keep theirs.
func tenantBusy() *refusal {
	return &refusal{status: http.StatusServiceUnavailable, kind: "unknown", retryAfter: "1",
		msg: "too many deliveries of this tenant are being processed; retry after the Retry-After delay"}
}

func tooManyMessage(over string) string {
	if over == "provider" {
		return "too many refused deliveries for this provider; retry after the Retry-After delay with a valid signature"
	}
	return "too many refused deliveries from this address; retry after the Retry-After delay with a valid signature"
}

// refuse answers ref: it counts it on /metrics, keeps a refused delivery
// and writes the answer.
func (h *Handler) refuse(in *inbound, ref *refusal) {
	if ref.delivery {
		h.logRefused(in, ref)
	}
	if ref.over != "" {
		h.metrics.Limited(ref.over)
	}
	status := ref.status
	if ref.err != nil {
		status = httpx.ErrorStatus(ref.err)
	}
	if ref.kind != "" {
		h.metrics.Delivery(ref.kind, status, time.Since(in.start).Seconds())
	}
	if ref.retryAfter != "" {
		in.w.Header().Set("Retry-After", ref.retryAfter)
	}
	if ref.err != nil {
		h.fail(in.w, in.r, ref.err)
		return
	}
	httpx.WriteError(in.w, status, ref.msg)
}

// logRefused keeps a refused delivery for the console, with its body only
// when an authenticated sender sent it. It costs no database write: the
// refusal is counted in memory and written with others (refusals.go). It
// spends the address's and the provider's budgets: past either, the
// answer becomes 429.
func (h *Handler) logRefused(in *inbound, ref *refusal) {
	d := in.d
	d.Status, d.Signature, d.Reason, d.Body = ref.status, ref.verdict, ref.msg, ref.body
	if ref.verdict != domain.SignatureValid {
		d.Body = nil
	}
	if over, wait := h.limits.refuse(in.client, in.p.ID, time.Now()); over != "" {
		ref.status, ref.msg, ref.over, ref.retryAfter = http.StatusTooManyRequests, tooManyMessage(over), over, httpx.RetryAfter(wait)
		d.Status = ref.status
	}
	h.refusals.add(d)
}
