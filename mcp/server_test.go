package mcp

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAllReadsWhateverTheRequestSaid: the body is read whole whether
// Content-Length said its size, less, more, or nothing.
func TestReadAllReadsWhateverTheRequestSaid(t *testing.T) {
	for _, body := range []string{"", "x", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, strings.Repeat("y", 5000)} {
		for _, said := range []int64{-1, 0, int64(len(body)) - 1, int64(len(body)), int64(len(body)) + 1, 1 << 20} {
			got, err := readAll(iotest.OneByteReader(strings.NewReader(body)), min(said, maxPresized))
			if err != nil || string(got) != body {
				t.Errorf("%d bytes, %d said: %d bytes read, %v", len(body), said, len(got), err)
			}
		}
	}
	if _, err := readAll(iotest.ErrReader(io.ErrUnexpectedEOF), 10); err != io.ErrUnexpectedEOF {
		t.Errorf("a read that failed: %v", err)
	}
}
