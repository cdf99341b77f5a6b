// Package team is `norma serve --team`: the team server's JSON API over
// one shared store, its bearer tokens and their roles.
//
// Tokens ([Tokens]) live in the state directory's team-tokens.json (mode
// 0600, replaced atomically under a flock), which keeps only each token's
// SHA-256; the token itself is printed once, by `norma serve token add`.
// A lookup compares every stored hash in constant time, and rereads the
// file when it changed, so a revoked token is refused from the next
// request on.
//
// Each token has one [Role]; [Can] is the whole authorization table:
//
//	approver  read approvals, decide them, read the audit log, runs, plugins
//	viewer    read approvals, read the audit log, runs, plugins
//	runner    read approvals, file requests (never decide one)
//
// Routes (all JSON; every error is {"error":{"code","message"}} with a
// stable reason code from package capability):
//
//	GET  /api/v1/whoami                        any role
//	GET  /api/v1/approvals?state=&run=&limit=   any role
//	GET  /api/v1/approvals/{id}?wait=30s        any role (long poll)
//	POST /api/v1/approvals, …/{id}/finish       runner (a grant and its uses are the filer's)
//	POST /api/v1/approvals/{id}/approve|deny    approver {"reason": "…"}
//	GET  /api/v1/audit?type=&run=&plugin=&tool=&decision=&since=&after=&limit=&newest=
//	GET  /api/v1/audit/verify, /api/v1/audit/checkpoints
//	GET  /api/v1/runs, /api/v1/runs/{id}, /api/v1/plugins
//	                                            approver, viewer
//
// No token, or an unknown or revoked one, is 401 TEAM_UNAUTHENTICATED; a
// role that may not do what the route does is 403 TEAM_FORBIDDEN, answered
// before the route reads its body, so nothing changes. A decision goes
// through [approval.Service.Decide], the one function that answers a
// request (the CLI and the inbox call it too), with DecidedBy "team:NAME";
// the Service audits it.
//
// Everything a model or a plugin wrote (previews, targets, tool names) is
// returned as JSON string data only, never interpreted.
//
// Mount point: other packages add their routes with [Server.Handle] (a
// route that authenticates on its own, such as the inbox's pages with a
// session cookie: [Tokens.Lookup], [Authorize]) or [Server.HandleFor] (a
// bearer token whose role may do an [Action]; the route reads the
// [Principal] with [PrincipalFrom]). A route that decides outside the API
// calls [Server.Changed] so long polls wake at once.
//
// Transport ([Listen]): a loopback IP address may serve plain HTTP (its
// Host header must then name a loopback host: DNS rebinding); any other
// address needs a certificate and key and serves TLS 1.2+ only.
package team
