// Package httpserve runs one handler's [http.Server]s on several
// listeners and stops them together: the hook daemon and the team server
// each serve on more than one listener (a Unix socket and loopback TCP;
// TCP and TLS), and a shutdown must reach every one.
package httpserve
