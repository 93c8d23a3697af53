package httpserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
)

// A browser pointed at a TLS listener with http:// sends a plain request.
// net/http answers it with one line ("Client sent an HTTP request to an
// HTTPS server."); a Server with PlainHTTP answers with a page of its own
// instead, which can say where to go and what is needed there (the
// board's: the dashboard under mutual TLS and its client certificate).
// Nothing else is served in plain HTTP: the answer is the page, whatever
// was asked, and the connection closes.
//
// Worked example, a board on 127.0.0.1:8889 with mutual TLS:
//  1. https:// with a certificate of the CA: served as ever.
//  2. http://127.0.0.1:8889/ui/: 400 with PlainHTTP("127.0.0.1:8889"),
//     which links https://127.0.0.1:8889/ui/.
//  3. https:// without a certificate: the handshake fails, as ever; the
//     browser shows its own error (no page can be sent before the
//     handshake).

// maxPlainRequestBytes bounds the plain request read before the answer.
const maxPlainRequestBytes = 16 << 10

// errPlainHTTP ends the TLS handshake of a connection answered in plain
// HTTP; net/http logs it as the handshake's error.
var errPlainHTTP = errors.New("a plain HTTP request on the TLS listener: answered with the plain-HTTP page")

// plainHTTPListener gives each connection it accepts a first look at what
// the client sends (plainHTTPConn).
type plainHTTPListener struct {
	net.Listener
	page func(host string) []byte
}

func (l plainHTTPListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &plainHTTPConn{Conn: conn, page: l.page, reader: bufio.NewReader(conn)}, nil
}

// plainHTTPConn is a connection under the TLS server. Its first read, the
// handshake's (in the server's connection goroutine, under its deadline,
// not in Accept), looks at the first byte: a TLS client starts with a
// handshake record (0x16), a plain request with a method's capital
// letters. A plain request is answered and the connection closed; any
// other byte goes on to TLS as it came.
type plainHTTPConn struct {
	net.Conn
	page   func(host string) []byte
	reader *bufio.Reader
	looked bool
}

func (c *plainHTTPConn) Read(b []byte) (int, error) {
	if !c.looked {
		c.looked = true
		first, err := c.reader.Peek(1)
		if err != nil {
			return 0, err
		}
		if first[0] >= 'A' && first[0] <= 'Z' {
			c.answerPlain()
			return 0, errPlainHTTP
		}
	}
	if c.reader.Buffered() == 0 {
		// What was looked at is read: on to the connection itself.
		return c.Conn.Read(b)
	}
	return c.reader.Read(b)
}

// answerPlain reads the plain request's head (bounded) for its Host, writes
// the page as a 400, and closes the connection. A request that cannot be
// read gets the page for an empty host.
func (c *plainHTTPConn) answerPlain() {
	host := ""
	if req, err := http.ReadRequest(bufio.NewReader(io.LimitReader(c.reader, maxPlainRequestBytes))); err == nil {
		host = req.Host
	}
	body := c.page(host)
	head := fmt.Sprintf("HTTP/1.1 400 Bad Request\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n"+
		"Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n", len(body))
	c.Conn.Write(append([]byte(head), body...)) //nolint:errcheck // the client went away: nothing to tell it
	c.Conn.Close()                              //nolint:errcheck // closed either way
}
