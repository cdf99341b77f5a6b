// Package daemon is the server behind `norma serve`: one long-lived
// process that answers agents' hooks with one shared decision engine, so a
// decision costs one request instead of one process start.
//
// A [Server] is a small router ([Server.Handle] adds routes; the team
// server builds on it). It serves
//
//	POST /hooks/{agent}   the agent's hook JSON in, its hook output out
//	GET  /healthz         {"ok":true}
//
// on two kinds of listener, each with its own guard:
//
//   - [ListenUnix]: a Unix socket (by default in the state directory),
//     mode 0600, whose every connection is checked with the kernel's
//     peer credentials (SO_PEERCRED): a peer of another uid is closed
//     before a byte is read. One daemon holds a socket at a time (a lock
//     file beside it); a stale socket left by a crash is replaced, a live
//     one is refused, and anything that is not a socket is never removed.
//   - [ListenLoopback]: TCP on a loopback address only, behind [Guard]:
//     a bearer token compared in constant time ([Token], kept 0600 in the
//     state directory), a Host header that must name a loopback host (DNS
//     rebinding), and no browser request at all (Origin or Sec-Fetch-*).
//
// Every hook answer that carries a decision is a 200 whose body is the
// agent's own output (a JSON deny included), with the command hook's exit
// code in the Norma-Hook-Exit header: Claude Code treats a non-2xx answer,
// a connection failure or a timeout of an http hook as a non-blocking error
// and goes on (https://code.claude.com/docs/en/hooks, "HTTP hooks"; the
// pinned 2.1.332 logs "HTTP hook response status" and takes only a 2xx as
// ok), so an error status must never stand for a denial, and an http hook
// fails open while the daemon is down (unless the hook sets "onFailure":
// "block", Claude Code 2.1.295 and later): the command hook is the safe
// door.
//
// [Client.Forward] is the command hook's way to the daemon: when no daemon
// answers the connection it reports ok=false and the command decides
// itself; once a daemon accepted the request, any failure (a crash, a
// kill, a timeout, a malformed answer) is a deny, never an allow.
package daemon
