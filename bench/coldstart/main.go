// Command coldstart measures whole-process start-up: it runs each command
// given as an argument (split on spaces, run without a shell) n times,
// interleaved (round i runs every command once, in turn), so that the
// load of a shared machine falls on all of them alike, and prints the
// median wall time and the median CPU time (user+sys) of each. The first
// round is a warm-up and is not counted. A command that fails stops the
// measurement. bench/coldstart.sh drives it.
//
//	go run ./coldstart -n 200 'norma --help' 'bwrap ... /bin/true'
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 100, "runs of each command")
	flag.Parse()
	cmds := flag.Args()
	if len(cmds) == 0 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: coldstart [-n RUNS] CMD...")
		os.Exit(2)
	}
	wall := make([][]time.Duration, len(cmds))
	cpu := make([][]time.Duration, len(cmds))
	for round := 0; round <= *n; round++ {
		for i, c := range cmds {
			w, u, err := run(strings.Fields(c))
			if err != nil {
				fmt.Fprintf(os.Stderr, "coldstart: %s: %v\n", c, err)
				os.Exit(1)
			}
			if round > 0 {
				wall[i] = append(wall[i], w)
				cpu[i] = append(cpu[i], u)
			}
		}
	}
	fmt.Printf("medians of %d interleaved runs each:\n", *n)
	for i, c := range cmds {
		fmt.Printf("%8.2f ms wall  %6.2f ms cpu  %s\n", ms(median(wall[i])), ms(median(cpu[i])), c)
	}
}

// run runs argv once, its output discarded, and returns its wall time and
// its CPU time (user+sys).
func run(argv []string) (wall, cpu time.Duration, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, err
	}
	wall = time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	return wall, cpu, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
