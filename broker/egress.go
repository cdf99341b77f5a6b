package broker

import (
	"net/http"
	"strings"

	"github.com/norma-run/norma/capability"
)

// egress is the content check of a request (issue 29), after the policy
// allowed its destination: the URL as the plugin wrote it, every
// end-to-end header (name and value) and the body are scanned by the
// detector engine of the broker's redactor (secret.Redactor.CheckEgress)
// toward the request's origin. A credential (a known value, a token of a
// known format, a private key, a high-entropy value after a credential's
// name) is SECRET_EGRESS, an identifier (card, IBAN, seed phrase)
// SENSITIVE_DATA_EGRESS: denied, or asked when the egress rules say ask
// (then approved like any approval_required request). The rule names
// the detector, never the value.
//
// What the broker itself injects is not scanned: it happens after this
// check, toward the secret's purpose only, and the placeholders standing
// for it (issued by this broker, in headers) are taken out of the header
// values before the scan. The Cookie header is not scanned: its values
// are the origin's own state, which it set. ok is false when the request
// may go on as decided.
func (b *Broker) egress(raw string, hdr http.Header, body []byte, origin string) (capability.Decision, bool) {
	var hb []byte
	for k, vs := range hdr {
		if k == "Cookie" {
			continue
		}
		for _, v := range vs {
			for _, bd := range b.bindings {
				if strings.Contains(v, bd.ph.Token()) {
					v = strings.ReplaceAll(strings.ReplaceAll(v, bd.phs, ""), bd.ph.Token(), "")
				}
			}
			hb = append(hb, k...)
			hb = append(hb, ": "...)
			hb = append(hb, v...)
			hb = append(hb, '\n')
		}
	}
	d, _ := b.red.CheckEgress([]string{origin}, []byte(raw), hb, body)
	if d.Mode == capability.Allow {
		return capability.Decision{}, false
	}
	return d, true
}
