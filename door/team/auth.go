package team

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/norma-run/norma/capability"
)

// Principal is who a request comes from: the name and role of its token.
type Principal struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
}

// ID is how decisions and audit events name the principal: "team:NAME"
// (the CLI's are "cli:USER").
func (p Principal) ID() string { return "team:" + p.Name }

type principalKey struct{}

// WithPrincipal returns ctx carrying p, as the routes of [Server.HandleFor]
// see it.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal [Server.HandleFor] authenticated
// for the request of ctx.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Authenticate returns the principal of r's "Authorization: Bearer TOKEN"
// header. It fails with a *capability.Error: TEAM_UNAUTHENTICATED for no
// token or an unknown or revoked one, TEAM_INTERNAL when the token file
// cannot be read (fail closed: nobody is let in).
func (t *Tokens) Authenticate(r *http.Request) (Principal, error) {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return Principal{}, refusal(capability.ReasonTeamUnauthenticated, "a bearer token is required (Authorization: Bearer TOKEN)")
	}
	p, err := t.Lookup(tok)
	if errors.Is(err, ErrUnknownToken) {
		return Principal{}, refusal(capability.ReasonTeamUnauthenticated, "the bearer token is unknown or revoked")
	}
	if err != nil {
		return Principal{}, &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonTeamInternal, Layer: capability.LayerTeam},
			Detail: "the token file cannot be read", Err: err}
	}
	return p, nil
}

// Authorize returns nil when p may do act, else TEAM_FORBIDDEN.
func Authorize(p Principal, act Action) error {
	if Can(p.Role, act) {
		return nil
	}
	return refusal(capability.ReasonTeamForbidden, "the "+string(p.Role)+" role may not do "+string(act))
}

func refusal(reason capability.Reason, msg string) *capability.Error {
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: reason, Layer: capability.LayerTeam}, Detail: msg}
}
