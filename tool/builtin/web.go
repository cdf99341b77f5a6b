package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/transform"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard/weburl"
	"github.com/norma-run/norma/tool"
)

// DefaultMaxFetchBytes is the response size WebFetch reads at most; the
// rest is cut and the result says so.
const DefaultMaxFetchBytes = 5 << 20

// userAgent is sent by the web tools.
const userAgent = "Norma-Tools/1 (+https://github.com/norma-run/norma)"

func needHTTP(env tool.Env) (*http.Client, error) {
	if env.HTTP == nil {
		return nil, fail(capability.ReasonCapabilityMissing, "this call has no network capability")
	}
	return env.HTTP, nil
}

func webFetchTool(maxBytes int64) tool.Spec {
	return tool.Spec{
		Name:        "WebFetch",
		Description: "Fetch a web page (GET) and return it as Markdown text.",
		Prompt: "Fetches an http(s) URL with GET through the network guard and returns readable text: HTML converted to Markdown (links kept, scripts and styles dropped), " +
			"text, JSON and XML as they are, decoded from their charset. Only destinations the policy allows are reachable; private and loopback addresses, " +
			"redirects to disallowed destinations and downgrades from https are refused with a reason code (NETWORK_*), and nothing is sent to a refused destination. " +
			"Responses are cut at the size cap. Binary content (images, archives) is refused with WEB_CONTENT_UNSUPPORTED.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["url"],"properties":{` +
			`"url":{"type":"string","minLength":1,"maxLength":4096,"pattern":"^[hH][tT][tT][pP][sS]?://"},` +
			`"raw":{"type":"boolean","description":"return HTML source instead of Markdown"}}}`),
		ReadOnly:         yes,
		ConcurrencySafe:  yes,
		CheckPermissions: allow,
		Accesses: func(in tool.Input) ([]tool.Access, error) {
			return []tool.Access{{Kind: capability.NetRequest, Method: http.MethodGet, URL: str(in, "url", "")}}, nil
		},
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			raw, _ := in.Get("raw")
			out, err := fetch(ctx, env, str(in, "url", ""), raw == true, maxBytes)
			return tool.Result{Content: out}, err
		},
	}
}

func fetch(ctx context.Context, env tool.Env, rawURL string, raw bool, maxBytes int64) (string, error) {
	client, err := needHTTP(env)
	if err != nil {
		return "", err
	}
	if _, err := weburl.Normalize(rawURL); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return "", fail(capability.ReasonNetworkInvalidURL, "%v", err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, cut, err := readCapped(resp.Body, maxBytes)
	if err != nil {
		return "", err
	}
	final := resp.Request.URL
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fail(capability.ReasonWebStatus, "%s answered %s", final.Redacted(), resp.Status)
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if mt == "" {
		mt = strings.ToLower(strings.TrimSpace(strings.Split(http.DetectContentType(body), ";")[0]))
	}
	isHTML := mt == "text/html" || mt == "application/xhtml+xml"
	textual := isHTML || strings.HasPrefix(mt, "text/") || mt == "application/json" || mt == "application/xml" ||
		strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") || mt == "application/javascript"
	if !textual {
		return "", fail(capability.ReasonWebContentUnsupported, "%s has content type %q; WebFetch returns text only", final.Redacted(), mt)
	}
	text, err := decodeCharset(body, ct)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\nContent-Type: %s\n", final.Redacted(), mt)
	if isHTML && !raw {
		title, md := htmlToMarkdown([]byte(text), final)
		if title != "" {
			fmt.Fprintf(&b, "Title: %s\n", title)
		}
		b.WriteString("\n")
		b.WriteString(md)
	} else {
		b.WriteString("\n")
		b.WriteString(strings.ToValidUTF8(text, "\uFFFD"))
	}
	if cut {
		fmt.Fprintf(&b, "\n\n(the response was cut at %d bytes)", maxBytes)
	}
	return b.String(), nil
}

// readCapped reads at most max bytes and reports whether there was more.
func readCapped(r io.Reader, max int64) ([]byte, bool, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > max {
		return data[:max], true, nil
	}
	return data, false, nil
}

// decodeCharset decodes body to UTF-8 from the charset named by the
// Content-Type header, a BOM or an HTML meta tag (golang.org/x/net/html/charset).
func decodeCharset(body []byte, contentType string) (string, error) {
	enc, name, _ := charset.DetermineEncoding(body, contentType)
	if name == "utf-8" || enc == nil {
		return string(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))), nil
	}
	out, _, err := transform.Bytes(enc.NewDecoder(), body)
	if err != nil {
		return "", fail(capability.ReasonWebContentUnsupported, "the response does not decode as %s: %v", name, err)
	}
	return string(out), nil
}
