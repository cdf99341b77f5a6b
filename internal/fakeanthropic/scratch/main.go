package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/norma-run/norma/internal/fakeanthropic"
)

func main() {
	var turns []fakeanthropic.Turn
	json.Unmarshal([]byte(os.Args[1]), &turns)
	s, err := fakeanthropic.New(turns...)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.URL)
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	<-c
	for _, r := range s.Requests() {
		fmt.Fprintf(os.Stderr, "%s %s %d\n", r.Method, r.Path, len(r.Body))
	}
	os.WriteFile(os.Args[2], []byte(s.Bodies()), 0o644)
	tr, _ := json.MarshalIndent(s.ToolResults(), "", " ")
	os.Stderr.Write(tr)
}
