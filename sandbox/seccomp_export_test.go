//go:build linux && !norma_init

package sandbox

// SwapSeccompFilters makes the host send isolated and broker as the
// filters until restore is called: what a stale or broken embed would
// send.
func SwapSeccompFilters(isolated, broker []byte) (restore func()) {
	oi, ob := isolatedFilter, brokerFilter
	isolatedFilter, brokerFilter = isolated, broker
	return func() { isolatedFilter, brokerFilter = oi, ob }
}
