// Package secrettest holds the samples the egress detector's tests send
// through every exit: one made-up token of each format the detector
// knows, encoded variants, sensitive identifiers, and the benign twins
// that must pass. The tokens are assembled from parts so that no
// repository scanner mistakes this file for a leak; none is live.
//
// Nothing in production imports it (internal/deptest).
package secrettest
