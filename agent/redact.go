package agent

import (
	"bytes"
	"encoding/json"

	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/secret"
)

// redactState returns the copy of st that is written to the state file:
// every text, tool result and tool input of the conversation, the pending
// results and the reason redacted with r (the gate already redacted what
// tools returned; this catches a secret the user typed or the model
// wrote). The input of a call that waits for approval is kept as it is:
// the approval is bound to its exact input, and resuming runs it. st is
// not changed; unchanged messages are shared.
func redactState(st *State, r *secret.Redactor) *State {
	cp := *st
	cp.Reason = r.Redact(cp.Reason)
	var keep map[string]string
	if st.Pending != nil {
		keep = st.Pending.Awaiting
	}
	cp.Messages = nil
	for _, m := range st.Messages {
		cp.Messages = append(cp.Messages, redactMessage(m, r, keep))
	}
	if st.Pending != nil && len(st.Pending.Results) > 0 {
		p := *st.Pending
		p.Results = make(map[string]provider.Block, len(st.Pending.Results))
		for id, b := range st.Pending.Results {
			p.Results[id] = redactBlock(b, r, keep)
		}
		cp.Pending = &p
	}
	return &cp
}

func redactMessage(m provider.Message, r *secret.Redactor, keep map[string]string) provider.Message {
	var out []provider.Block
	for i, b := range m.Blocks {
		nb := redactBlock(b, r, keep)
		if out == nil && !sameBlock(nb, b) {
			out = append(make([]provider.Block, 0, len(m.Blocks)), m.Blocks[:i]...)
		}
		if out != nil {
			out = append(out, nb)
		}
	}
	if out != nil {
		m.Blocks = out
	}
	return m
}

func sameBlock(a, b provider.Block) bool {
	return a.Text == b.Text && a.Content == b.Content && bytes.Equal(a.Input, b.Input)
}

func redactBlock(b provider.Block, r *secret.Redactor, keep map[string]string) provider.Block {
	b.Text = r.Redact(b.Text)
	b.Content = r.Redact(b.Content)
	if _, ok := keep[b.ID]; !ok || b.ID == "" {
		b.Input = redactJSON(b.Input, r)
	}
	return b
}

// redactJSON redacts every string of a JSON document (keys and values),
// so the result is still valid JSON whatever a secret's bytes are. A
// document in which nothing matched is returned as it is.
func redactJSON(raw json.RawMessage, r *secret.Redactor) json.RawMessage {
	if len(raw) == 0 || !bytes.ContainsRune(raw, '\\') && bytes.Equal(r.RedactBytes(raw), raw) {
		return raw // no escape that could hide a match, and no match
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	changed := false
	v = redactValue(v, r, &changed)
	if !changed {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return raw
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func redactValue(v any, r *secret.Redactor, changed *bool) any {
	switch t := v.(type) {
	case string:
		s := r.Redact(t)
		*changed = *changed || s != t
		return s
	case []any:
		for i := range t {
			t[i] = redactValue(t[i], r, changed)
		}
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			rk := r.Redact(k)
			*changed = *changed || rk != k
			m[rk] = redactValue(x, r, changed)
		}
		return m
	}
	return v
}
