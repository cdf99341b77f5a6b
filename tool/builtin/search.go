package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard/weburl"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/tool"
)

// SearchResult is one web search hit.
type SearchResult struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet,omitempty"`
}

// SearchBackend is a web search API that WebSearch calls through the
// call's Env (its HTTP client and secret handles), never through a client
// of its own. [NewBrave] and [NewSearXNG] are the built-in backends.
type SearchBackend interface {
	// Name names the backend in the catalogue and in errors.
	Name() string
	// Permissions returns the network rules and secrets the backend needs;
	// they are added to the built-in manifest, so the policy knows exactly
	// where WebSearch may send a query, and WebSearch declares them as the
	// accesses of every call.
	Permissions() ([]manifest.NetRule, []manifest.Secret)
	// Search runs one query.
	Search(ctx context.Context, env tool.Env, query string, count int) ([]SearchResult, error)
}

// endpoint is a normalized search API endpoint: origin plus a path prefix.
type endpoint struct {
	origin string
	prefix string // "" or "/base" without a trailing slash
}

func parseEndpoint(raw string) (endpoint, error) {
	u, err := weburl.Normalize(raw)
	if err != nil {
		return endpoint{}, err
	}
	pu, err := url.Parse(raw)
	if err != nil || pu.RawQuery != "" || pu.Fragment != "" {
		return endpoint{}, fmt.Errorf("endpoint %q must not have a query or fragment", raw)
	}
	return endpoint{origin: u.Origin, prefix: strings.TrimSuffix(u.Path, "/")}, nil
}

// BraveOptions configures a Brave-style web search API backend
// (GET /res/v1/web/search?q=...; key in X-Subscription-Token).
type BraveOptions struct {
	// Endpoint is the API base URL; empty means https://api.search.brave.com.
	Endpoint string
	// SecretName names the API key in the secret vault. The key is
	// injected by the egress broker as the X-Subscription-Token header on
	// requests to the endpoint's origin; the tool never sees it. Exactly
	// one of SecretName and APIKey is required.
	SecretName string
	// APIKey is a key given in configuration, sent by the tool itself.
	// Prefer SecretName.
	APIKey string
}

// Brave is the Brave-style backend; build it with NewBrave.
type Brave struct {
	ep     endpoint
	secret string
	key    string
}

// braveHeader is the header that carries the key.
const braveHeader = "X-Subscription-Token"

var secretNameRE = func(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// NewBrave validates o. A misconfigured backend is an error here, at
// session start, never a silently missing tool.
func NewBrave(o BraveOptions) (*Brave, error) {
	if o.Endpoint == "" {
		o.Endpoint = "https://api.search.brave.com"
	}
	ep, err := parseEndpoint(o.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("tools: WebSearch brave backend: %w", err)
	}
	switch {
	case (o.SecretName == "") == (o.APIKey == ""):
		return nil, errors.New("tools: WebSearch brave backend: set exactly one of SecretName and APIKey")
	case o.SecretName != "" && !secretNameRE(o.SecretName):
		return nil, fmt.Errorf("tools: WebSearch brave backend: invalid secret name %q", o.SecretName)
	case o.APIKey != "" && strings.ContainsAny(o.APIKey, "\r\n\x00"):
		return nil, errors.New("tools: WebSearch brave backend: the API key holds a control character")
	}
	return &Brave{ep: ep, secret: o.SecretName, key: o.APIKey}, nil
}

// Name returns "brave".
func (b *Brave) Name() string { return "brave" }

// Permissions implements SearchBackend.
func (b *Brave) Permissions() ([]manifest.NetRule, []manifest.Secret) {
	rules := []manifest.NetRule{{Origin: b.ep.origin, Methods: []string{"GET"}, Paths: []string{b.ep.prefix + "/res/v1/web/search"}}}
	if b.secret == "" {
		return rules, nil
	}
	return rules, []manifest.Secret{{Name: b.secret, Purpose: b.ep.origin, InjectAs: "brokered_header", Header: braveHeader}}
}

// Search implements SearchBackend.
func (b *Brave) Search(ctx context.Context, env tool.Env, q string, count int) ([]SearchResult, error) {
	if b.secret != "" {
		if env.Secrets == nil {
			return nil, fail(capability.ReasonCapabilityMissing, "this call holds no secret handles; the search API key %q is unavailable", b.secret)
		}
		h, err := env.Secrets.Handle(ctx, b.secret)
		if err != nil {
			return nil, err
		}
		if h.Origin() != b.ep.origin {
			return nil, fail(capability.ReasonSecretOriginMismatch, "secret %q is for %s, not %s", b.secret, h.Origin(), b.ep.origin)
		}
	}
	v := url.Values{"q": {q}, "count": {strconv.Itoa(count)}}
	hdr := http.Header{"Accept": {"application/json"}}
	if b.key != "" {
		hdr.Set(braveHeader, b.key)
	}
	var body struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := getJSON(ctx, env, b.Name(), b.ep.origin+b.ep.prefix+"/res/v1/web/search?"+v.Encode(), hdr, &body); err != nil {
		return nil, err
	}
	out := make([]SearchResult, 0, len(body.Web.Results))
	for _, r := range body.Web.Results {
		out = append(out, SearchResult{Title: r.Title, URL: r.URL, Snippet: stripTags(r.Description)})
	}
	return out, nil
}

// SearXNG is a SearXNG-compatible backend (GET /search?q=...&format=json);
// build it with NewSearXNG.
type SearXNG struct{ ep endpoint }

// NewSearXNG validates the instance URL (origin and optional base path).
func NewSearXNG(endpointURL string) (*SearXNG, error) {
	if endpointURL == "" {
		return nil, errors.New("tools: WebSearch searxng backend: no endpoint")
	}
	ep, err := parseEndpoint(endpointURL)
	if err != nil {
		return nil, fmt.Errorf("tools: WebSearch searxng backend: %w", err)
	}
	return &SearXNG{ep: ep}, nil
}

// Name returns "searxng".
func (s *SearXNG) Name() string { return "searxng" }

// Permissions implements SearchBackend.
func (s *SearXNG) Permissions() ([]manifest.NetRule, []manifest.Secret) {
	return []manifest.NetRule{{Origin: s.ep.origin, Methods: []string{"GET"}, Paths: []string{s.ep.prefix + "/search"}}}, nil
}

// Search implements SearchBackend.
func (s *SearXNG) Search(ctx context.Context, env tool.Env, q string, count int) ([]SearchResult, error) {
	v := url.Values{"q": {q}, "format": {"json"}}
	var body struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := getJSON(ctx, env, s.Name(), s.ep.origin+s.ep.prefix+"/search?"+v.Encode(), http.Header{"Accept": {"application/json"}}, &body); err != nil {
		return nil, err
	}
	out := make([]SearchResult, 0, min(len(body.Results), count))
	for _, r := range body.Results {
		if len(out) == count {
			break
		}
		out = append(out, SearchResult{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return out, nil
}

// maxSearchBody bounds a search API response.
const maxSearchBody = 4 << 20

func getJSON(ctx context.Context, env tool.Env, backend, u string, hdr http.Header, dst any) error {
	client, err := needHTTP(env)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fail(capability.ReasonNetworkInvalidURL, "%v", err)
	}
	req.Header = hdr
	req.Header.Set("User-Agent", userAgent)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, cut, err := readCapped(resp.Body, maxSearchBody)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fail(capability.ReasonSearchBackendFailed, "%s answered %s", backend, resp.Status)
	}
	if cut {
		return fail(capability.ReasonSearchBackendFailed, "%s answered more than %d bytes", backend, maxSearchBody)
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return fail(capability.ReasonSearchBackendFailed, "%s answered a body that is not its JSON format: %v", backend, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}

// stripTags removes the <strong> highlighting some APIs put in snippets.
func stripTags(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func webSearchTool(be SearchBackend) tool.Spec {
	rules, secrets := be.Permissions()
	return tool.Spec{
		Name:        "WebSearch",
		Description: "Search the web and return titles, URLs and snippets.",
		Prompt: "Sends a query to the configured search backend (" + be.Name() + ") through the network guard and returns up to count results as title, URL and snippet. " +
			"It reaches only the search API; use WebFetch on a result URL to read a page (if the policy allows that destination).",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["query"],"properties":{` +
			`"query":{"type":"string","minLength":1,"maxLength":400},"count":{"type":"integer","minimum":1,"maximum":20,"default":8}}}`),
		ReadOnly:         yes,
		ConcurrencySafe:  yes,
		CheckPermissions: allow,
		Accesses: func(tool.Input) ([]tool.Access, error) {
			var acc []tool.Access
			for _, r := range rules {
				for _, p := range r.Paths {
					acc = append(acc, tool.Access{Kind: capability.NetRequest, Method: http.MethodGet, URL: r.Origin + p})
				}
			}
			for _, s := range secrets {
				acc = append(acc, tool.Access{Kind: capability.SecretUse, Secret: s.Name, Origin: s.Purpose})
			}
			return acc, nil
		},
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			var a struct {
				Query string
				Count int
			}
			if err := in.Decode(&a); err != nil {
				return tool.Result{}, fail(capability.ReasonInvalidRequest, "%v", err)
			}
			if a.Count <= 0 {
				a.Count = 8
			}
			res, err := be.Search(ctx, env, a.Query, a.Count)
			if err != nil {
				return tool.Result{}, err
			}
			if len(res) == 0 {
				return tool.Result{Content: "no results for " + strconv.Quote(a.Query)}, nil
			}
			var b strings.Builder
			for i, r := range res {
				fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, truncRunes(r.Title, 300), r.URL)
				if r.Snippet != "" {
					fmt.Fprintf(&b, "   %s\n", truncRunes(strings.Join(strings.Fields(r.Snippet), " "), 600))
				}
			}
			return tool.Result{Content: strings.TrimSuffix(b.String(), "\n")}, nil
		},
	}
}
