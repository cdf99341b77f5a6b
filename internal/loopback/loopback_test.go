package loopback

import "testing"

// hostTests are well-formed loopback hosts and their malformed
// neighbours; FuzzHost starts from them too.
var hostTests = []struct {
	host string
	want bool
}{
	{"localhost", true},
	{"LocalHost:8787", true},
	{"127.0.0.1", true},
	{"127.9.9.9:1", true},
	{"127.0.0.1:65535", true},
	{"[::1]", true},
	{"[::1]:8787", true},
	{"[0:0:0:0:0:0:0:1]:80", true},
	{"[::ffff:127.0.0.1]:1", true},

	// Brackets out of place.
	{"localhost]", false},
	{"loCAlhost]", false},
	{"[localhost]", false},
	{"[localhost]:80", false},
	{"[::1", false},
	{"[::1:80", false},
	{"::1]", false},
	{"[::1]x", false},
	{"[::1]:", false},
	{"[::1]]", false},
	{"[[::1]]", false},
	{"[::1]:80]", false},
	{"[127.0.0.1]", false},
	{"127.0.0.1]", false},
	{"[::1]:80:80", false},
	// IPv6 without brackets, with a zone.
	{"::1", false},
	{"::1:80", false},
	{"[::1%lo]:80", false},
	{"[::1%25lo]", false},
	// Names like it.
	{"LOCALHOST.", false},
	{"localhost.:80", false},
	{"localhoſt", false},
	{"localhost.attacker.test", false},
	{"127.0.0.1.nip.io", false},
	{"127.1", false},
	{"127.000.000.001", false},
	{"0x7f.0.0.1", false},
	// Ports.
	{"localhost:", false},
	{"localhost:@", false},
	{"localhost:65536", false},
	{"localhost:123456", false},
	{"localhost:-1", false},
	{"localhost:+80", false},
	{"localhost:80:80", false},
	{"u@localhost", false},
	{"localhost/x", false},
	{"localhost ", false},
	{" localhost", false},
	{"", false},
	{"0.0.0.0", false},
	{"[::]", false},
}

func TestHost(t *testing.T) {
	for _, tt := range hostTests {
		if got := Host(tt.host); got != tt.want {
			t.Errorf("Host(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}
