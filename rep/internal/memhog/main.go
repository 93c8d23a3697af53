// Command memhog is a memory hog for the rep package's memory guard
// tests. It allocates -mb MiB and writes to every page of it, so the
// memory is resident, prints
//
//	memhog <pid>: <n> MB in use
//
// and sleeps until it is killed. With -children K it starts K copies of
// itself instead, each taking -mb MiB; they stay in its process group, as
// an instance's children would, and print their own lines (with -setsid,
// each starts a session and process group of its own, as a child that
// means to escape its group would). A line
// "grow N" on stdin makes a hog without children take N MiB more (and
// print its new total), so a test can decide when it grows.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// held keeps every allocation reachable, so the garbage collector never
// gives any of it back.
var held [][]byte

func main() {
	mb := flag.Int("mb", 0, "MiB to allocate and touch (each child's, with -children)")
	children := flag.Int("children", 0, "start this many copies of memhog, each taking -mb MiB, in this process group")
	setsid := flag.Bool("setsid", false, "start the children each in a session and process group of its own")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix(fmt.Sprintf("memhog %d: ", os.Getpid()))

	if *children > 0 {
		startChildren(*children, *mb, *setsid)
	} else {
		grow(*mb)
		readGrowCommands()
	}
	for {
		time.Sleep(time.Hour)
	}
}

// startChildren starts n copies of memhog taking mb MiB each. They share
// this process's group, unless setsid, and its stdout.
func startChildren(n, mb int, setsid bool) {
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	for range n {
		cmd := exec.Command(self, "-mb", strconv.Itoa(mb))
		cmd.Stdout = os.Stdout
		cmd.Stderr = os.Stderr
		if setsid {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := cmd.Start(); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("memhog %d: started %d children\n", os.Getpid(), n)
}

// readGrowCommands serves "grow N" lines from stdin until it ends (at
// once when stdin is /dev/null).
func readGrowCommands() {
	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) != 2 || fields[0] != "grow" {
			log.Printf("unknown command %q (want \"grow N\")", scanner.Text())
			continue
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil || n < 0 {
			log.Printf("bad size %q", fields[1])
			continue
		}
		grow(n)
	}
}

// grow allocates mb MiB more and writes a byte to each page of it: the
// kernel hands out a page when it is first written, so only then does it
// count as resident.
func grow(mb int) {
	if mb > 0 {
		block := make([]byte, mb<<20)
		for i := 0; i < len(block); i += os.Getpagesize() {
			block[i] = 1
		}
		held = append(held, block)
	}
	total := 0
	for _, block := range held {
		total += len(block) >> 20
	}
	fmt.Printf("memhog %d: %d MB in use\n", os.Getpid(), total)
}
