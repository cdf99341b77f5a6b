// Package inbox is the approval inbox of the team server: server-rendered
// HTML pages (html/template, no script at all) on which a person signs in
// with a team token, sees the pending approval requests with the exact
// preview each record holds (the command, the plugin tool's arguments, the
// diff), approves or denies one with a reason, and reads the audit trail
// of a run.
//
// Routes, under [Prefix]:
//
//	GET  /inbox/                   pending requests, each with its preview and buttons
//	GET  /inbox/approvals/{id}     one request, its state and decision
//	POST /inbox/approvals/{id}     approve or deny it (decision, why, csrf)
//	GET  /inbox/runs/{id}          the audit trail of a run
//	GET  /inbox/signin             the sign-in form; POST signs in with a token
//	POST /inbox/signout
//	GET  /inbox/style.css
//
// An answer is [approval.Service.Decide], the one function the CLI and
// the JSON API call too: it records the decision with the signed-in
// token's name as DecidedBy and writes it to the audit log.
//
// Sessions are random ids (256 bits) kept in memory; the cookie is
// HttpOnly, SameSite=Strict, Path=/ and Secure (with the __Host- prefix)
// when the page is served over TLS. A session keeps the token it signed in
// with and authenticates it again on every request, so a revoked token or
// a changed role takes effect at once.
//
// Every state-changing POST is checked twice: by the browser's own
// provenance headers ([http.CrossOriginProtection]: Sec-Fetch-Site, else
// Origin, must be same-origin) and by a per-session synchronizer token in
// the form, compared in constant time. A refused POST changes nothing.
//
// Everything a model, a tool or a plugin wrote goes through html/template
// contexts, after [termtext.EscapeText] has made its control characters
// and bidirectional overrides visible; every page carries a strict
// Content-Security-Policy (no script, no inline style, no frames, forms
// only to this origin), X-Frame-Options: DENY, Referrer-Policy: no-referrer
// and Cache-Control: no-store.
package inbox
