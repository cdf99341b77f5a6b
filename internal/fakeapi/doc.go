// Package fakeapi is what the loopback fakes of the model APIs
// (internal/fakeanthropic, fakeopenai, fakegemini) share: a server on a
// loopback port that reads and records every request, its credentials
// left out, before the fake answers it. A test double: never linked into
// a production binary (internal/deptest).
package fakeapi
