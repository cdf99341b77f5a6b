package secret

import "sync"

// More token kinds: the common cloud, payment, chat and CI credentials
// that start with a fixed prefix. Like the kinds of tokens.go, they are
// redacted from every output and detected at every exit ([Redactor.Detect]).
const (
	KindAnthropicKey   = "anthropic-key"
	KindOpenAIKey      = "openai-key"
	KindStripeKey      = "stripe-key"
	KindGoogleAPIKey   = "google-api-key"
	KindGoogleOAuth    = "google-oauth-token"
	KindGitLabToken    = "gitlab-token"
	KindNPMToken       = "npm-token"
	KindPyPIToken      = "pypi-token"
	KindSlackWebhook   = "slack-webhook"
	KindDiscordWebhook = "discord-webhook"
	KindDiscordToken   = "discord-token"
	KindTelegramToken  = "telegram-bot-token"
	KindTwilioKey      = "twilio-key"
	KindSendGridKey    = "sendgrid-key"
	KindDigitalOcean   = "digitalocean-token"
	KindHuggingFace    = "huggingface-token"
	KindShopifyToken   = "shopify-token"
	KindSquareToken    = "square-token"
	KindAtlassianToken = "atlassian-token"
	KindCIToken        = "ci-token"
	KindAgeKey         = "age-secret-key"
)

// family is a token format with a fixed prefix: the prefix, then a body
// of at least min (at most max, 0 for no bound) characters that body
// accepts. A match must not continue a word on the left (the byte before
// it is not [A-Za-z0-9_]) nor, with a max, on the right. check, when
// set, is a further condition on the body.
type family struct {
	prefix string
	kind   string
	body   func(byte) bool
	min    int
	max    int
	check  func(body []byte) bool
}

func isHexLower(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

func isHexDigit(c byte) bool { return isHexLower(c) || 'A' <= c && c <= 'F' }

func isWebhookPath(c byte) bool { return isB64URL(c) || c == '/' }

// hasDigit keeps a long word (sk-learn-…) from passing for a key: every
// generated key of these families holds a digit somewhere.
func hasDigit(b []byte) bool {
	for _, c := range b {
		if '0' <= c && c <= '9' {
			return true
		}
	}
	return false
}

// families are the prefixed token formats, longest prefix first among
// those that share a start (sk-ant- before sk-).
var families = []family{
	{"sk-ant-", KindAnthropicKey, isB64URL, 32, 0, hasDigit},
	{"sk-proj-", KindOpenAIKey, isB64URL, 32, 0, hasDigit},
	{"sk-svcacct-", KindOpenAIKey, isB64URL, 32, 0, hasDigit},
	{"sk-", KindOpenAIKey, isB64URL, 40, 0, hasDigit},
	{"sk_live_", KindStripeKey, isAlnum, 20, 0, nil},
	{"rk_live_", KindStripeKey, isAlnum, 20, 0, nil},
	{"sk_test_", KindStripeKey, isAlnum, 20, 0, nil},
	{"rk_test_", KindStripeKey, isAlnum, 20, 0, nil},
	{"whsec_", KindStripeKey, isAlnum, 24, 0, nil},
	{"AIza", KindGoogleAPIKey, isB64URL, 35, 35, nil},
	{"GOCSPX-", KindGoogleOAuth, isB64URL, 24, 0, nil},
	{"ya29.", KindGoogleOAuth, isB64URL, 40, 0, hasDigit},
	{"glpat-", KindGitLabToken, isB64URL, 20, 0, nil},
	{"glrt-", KindGitLabToken, isB64URL, 20, 0, nil},
	{"gldt-", KindGitLabToken, isB64URL, 20, 0, nil},
	{"npm_", KindNPMToken, isAlnum, 36, 36, nil},
	{"pypi-AgEIcHlwaS5vcmc", KindPyPIToken, isB64URL, 40, 0, nil},
	{"xapp-", KindSlackToken, isSlack, 20, 0, nil},
	{"hooks.slack.com/services/T", KindSlackWebhook, isWebhookPath, 20, 0, nil},
	{"discord.com/api/webhooks/", KindDiscordWebhook, isWebhookPath, 40, 0, nil},
	{"discordapp.com/api/webhooks/", KindDiscordWebhook, isWebhookPath, 40, 0, nil},
	{"SK", KindTwilioKey, isHexLower, 32, 32, nil},
	{"SG.", KindSendGridKey, func(c byte) bool { return isB64URL(c) || c == '.' }, 60, 0, nil},
	{"dop_v1_", KindDigitalOcean, isHexLower, 64, 64, nil},
	{"doo_v1_", KindDigitalOcean, isHexLower, 64, 64, nil},
	{"hf_", KindHuggingFace, isAlnum, 30, 0, hasDigit},
	{"shpat_", KindShopifyToken, isHexDigit, 32, 32, nil},
	{"shpss_", KindShopifyToken, isHexDigit, 32, 32, nil},
	{"shpca_", KindShopifyToken, isHexDigit, 32, 32, nil},
	{"sq0atp-", KindSquareToken, isB64URL, 22, 0, nil},
	{"sq0csp-", KindSquareToken, isB64URL, 40, 0, nil},
	{"ATATT3", KindAtlassianToken, func(c byte) bool { return isB64URL(c) || c == '=' }, 100, 0, nil},
	{"CCIPAT_", KindCIToken, isB64URL, 30, 0, nil},
	{"bkua_", KindCIToken, isHexLower, 40, 40, nil},
	{"AGE-SECRET-KEY-1", KindAgeKey, isUpperDigit, 50, 0, nil},
}

// familyStarts indexes families by their first byte.
var familyStarts = sync.OnceValue(func() (idx [256][]int) {
	for i, f := range families {
		idx[f.prefix[0]] = append(idx[f.prefix[0]], i)
	}
	return idx
})

// matchFamily is matchToken for the prefixed families, with its contract.
func matchFamily(s []byte, prev int, final bool) (n int, kind string, more bool) {
	fs := familyStarts()[s[0]]
	if len(fs) == 0 {
		return 0, "", false
	}
	if prev >= 0 && isWord(byte(prev)) {
		return 0, "", false
	}
	for _, i := range fs {
		f := &families[i]
		ok, m := prefix(s, f.prefix)
		if m {
			more = more || !final
			continue
		}
		if !ok {
			continue
		}
		end, m := body(s, len(f.prefix), f.body, final)
		if m {
			if f.max == 0 || end-len(f.prefix) <= f.max {
				more = true
			}
			continue
		}
		b := s[len(f.prefix):end]
		if len(b) < f.min || f.max > 0 && len(b) > f.max || f.max > 0 && end < len(s) && isWord(s[end]) {
			continue
		}
		if f.check != nil && !f.check(b) {
			continue
		}
		if end > n {
			n, kind = end, f.kind
		}
	}
	if more && !final {
		return 0, "", true
	}
	return n, kind, false
}

// matchTelegram matches a Telegram bot token: 8 to 10 digits, ':', then
// 35 of [A-Za-z0-9_-] (exactly: the run ends there).
func matchTelegram(s []byte, prev int, final bool) (int, string, bool) {
	if prev >= 0 && (isWord(byte(prev)) || prev == ':') {
		return 0, "", false
	}
	d, more := body(s, 0, func(c byte) bool { return '0' <= c && c <= '9' }, final)
	switch {
	case more && d <= 10:
		return 0, "", true
	case d < 8 || d > 10 || d == len(s) || s[d] != ':':
		return 0, "", false
	}
	end, more := body(s, d+1, isB64URL, final)
	switch {
	case more && end-d-1 <= 35:
		return 0, "", true
	case end-d-1 != 35:
		return 0, "", false
	}
	return end, KindTelegramToken, false
}

// matchDiscord matches a Discord bot token: the user id in base64 (a
// decimal id: MT, Mj, …, OT), '.', a 6 or 7 character timestamp, '.', and
// an HMAC of 27 to 40 characters.
func matchDiscord(s []byte, prev int, final bool) (int, string, bool) {
	if prev >= 0 && (isB64URL(byte(prev)) || prev == '.') {
		return 0, "", false
	}
	a, more := body(s, 0, isB64URL, final)
	if more {
		return 0, "", a <= 28
	}
	if a < 23 || a > 28 || a == len(s) || s[a] != '.' {
		return 0, "", false
	}
	t, more := body(s, a+1, isB64URL, final)
	if more {
		return 0, "", t-a-1 <= 7
	}
	if n := t - a - 1; n < 6 || n > 7 || t == len(s) || s[t] != '.' {
		return 0, "", false
	}
	h, more := body(s, t+1, isB64URL, final)
	if more {
		return 0, "", true
	}
	if n := h - t - 1; n < 27 || n > 40 {
		return 0, "", false
	}
	return h, KindDiscordToken, false
}

// discordStarts are the base64 forms of a decimal id's first digit.
var discordStarts = []string{"MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz", "OD", "OT"}

// familyTokenStarts are the first two bytes of the formats of this file.
func familyTokenStarts() []string {
	var out []string
	for _, f := range families {
		out = append(out, f.prefix[:2])
	}
	out = append(out, discordStarts...)
	for a := '1'; a <= '9'; a++ {
		for b := '0'; b <= '9'; b++ {
			out = append(out, string([]rune{a, b}))
		}
	}
	return out
}
