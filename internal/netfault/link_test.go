package netfault_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/corkboard/corkboard/internal/netfault"
)

// An echo server behind a link: a line sent while the link is cut gets no
// answer until the link is healed, and then gets it.
func TestCutHoldsAndHealDelivers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	link, err := netfault.NewLink(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	c, err := net.Dial("tcp", link.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	say := func(line string) (string, error) {
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			return "", err
		}
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		return r.ReadString('\n')
	}
	if got, err := say("before"); err != nil || got != "before\n" {
		t.Fatalf("through a whole link: %q, %v", got, err)
	}
	link.Cut()
	if got, err := say("during"); err == nil {
		t.Fatalf("through a cut link: answered %q", got)
	}
	link.Heal()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "during\n" {
		t.Fatalf("after healing, the held line: %q, %v", got, err)
	}
}
