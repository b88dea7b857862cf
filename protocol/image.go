package protocol

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Why ImageCheck refuses a picture; compare with errors.Is. The error
// ImageCheck returns is an *ImageError wrapping one of these.
var (
	ErrImageBytes    = errors.New("picture has too many bytes of base64")
	ErrImageBase64   = errors.New("picture data is not standard base64")
	ErrImageFormat   = errors.New("picture is not a PNG, GIF, JPEG or WebP")
	ErrImageMimeType = errors.New("picture's MIME type does not match its bytes")
	ErrImageHeader   = errors.New("picture's header cannot be read")
	ErrImageSide     = errors.New("picture is too large a side")
)

// ImageError is why ImageCheck refused a picture.
type ImageError struct {
	Kind   error  // one of the ErrImage… values
	Format string // what the bytes are ("PNG", "GIF", "JPEG", "WebP"), when known
	Detail string // for logs; never holds the tab's own strings
}

// Error describes the refusal for a log line.
func (e *ImageError) Error() string {
	if e.Detail == "" {
		return "protocol: " + e.Kind.Error()
	}
	return "protocol: " + e.Kind.Error() + ": " + e.Detail
}

// Unwrap returns Kind.
func (e *ImageError) Unwrap() error { return e.Kind }

// imageFormat is a picture format ImageCheck reads.
type imageFormat struct {
	name, mimeType string
	size           func(head []byte, r *bufio.Reader) (w, h int, detail string)
}

var (
	formatPNG  = imageFormat{"PNG", "image/png", pngSize}
	formatGIF  = imageFormat{"GIF", "image/gif", gifSize}
	formatJPEG = imageFormat{"JPEG", "image/jpeg", jpegSize}
	formatWebP = imageFormat{"WebP", "image/webp", webpSize}
)

// headLen is how many decoded bytes hold every format's size but JPEG's.
const headLen = 30

// ImageCheck returns a picture's size if it may travel as image content
// (SPEC §4, §10): at most ImageMaxBase64Bytes of standard base64 (padding
// may be missing), a PNG, GIF, JPEG or WebP whose MIME type says so, at
// most ImageMaxSide pixels a side. The length is checked before anything is
// decoded, and only the header is decoded (for JPEG, up to the frame
// header). The width and height are returned when they were read, also
// with ErrImageSide. The error is an *ImageError.
func ImageCheck(img Media) (width, height int, err error) {
	if len(img.Data) > ImageMaxBase64Bytes {
		return 0, 0, &ImageError{Kind: ErrImageBytes,
			Detail: fmt.Sprintf("%d bytes, the limit is %d", len(img.Data), ImageMaxBase64Bytes)}
	}
	body, err := base64Body(img.Data)
	if err != nil {
		return 0, 0, err
	}
	r := bufio.NewReaderSize(base64.NewDecoder(base64.RawStdEncoding, strings.NewReader(body)), 512)
	head, _ := r.Peek(headLen) // fewer bytes come with an error; the formats check lengths
	f, ok := detectFormat(head)
	if !ok {
		return 0, 0, &ImageError{Kind: ErrImageFormat}
	}
	if strings.ToLower(strings.TrimSpace(img.MimeType)) != f.mimeType {
		return 0, 0, &ImageError{Kind: ErrImageMimeType, Format: f.name,
			Detail: "the bytes are " + f.name}
	}
	w, h, detail := f.size(head, r)
	if detail != "" {
		return 0, 0, &ImageError{Kind: ErrImageHeader, Format: f.name, Detail: detail}
	}
	if w <= 0 || h <= 0 {
		return 0, 0, &ImageError{Kind: ErrImageHeader, Format: f.name,
			Detail: fmt.Sprintf("%d × %d pixels", w, h)}
	}
	if w > ImageMaxSide || h > ImageMaxSide {
		return w, h, &ImageError{Kind: ErrImageSide, Format: f.name,
			Detail: fmt.Sprintf("%d × %d pixels, the limit is %d a side", w, h, ImageMaxSide)}
	}
	return w, h, nil
}

// base64Index is true for each byte of the standard base64 alphabet.
var base64Index = func() (t [256]bool) {
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" {
		t[c] = true
	}
	return t
}()

// base64Body returns data without its padding after checking every byte
// is of the standard alphabet and the padding, if any, is right. The whole
// string is checked (without decoding it) because hosts decode all of it.
func base64Body(data string) (string, error) {
	body := strings.TrimSuffix(data, "=")
	body = strings.TrimSuffix(body, "=")
	pad := len(data) - len(body)
	if len(body)%4 == 1 || (pad > 0 && len(data)%4 != 0) {
		return "", &ImageError{Kind: ErrImageBase64, Detail: "wrong length or padding"}
	}
	for i := 0; i < len(body); i++ {
		if !base64Index[body[i]] {
			return "", &ImageError{Kind: ErrImageBase64,
				Detail: fmt.Sprintf("byte %d is not of the standard alphabet", i)}
		}
	}
	return body, nil
}

// padBase64 adds the padding ImageCheck let a picture's data go without,
// so hosts get standard base64.
func padBase64(data string) string {
	if n := len(data) % 4; n != 0 {
		return data + strings.Repeat("=", 4-n)
	}
	return data
}

// detectFormat names the format head's signature is.
func detectFormat(head []byte) (imageFormat, bool) {
	s := string(head)
	switch {
	case strings.HasPrefix(s, "\x89PNG\r\n\x1a\n"):
		return formatPNG, true
	case strings.HasPrefix(s, "GIF87a"), strings.HasPrefix(s, "GIF89a"):
		return formatGIF, true
	case strings.HasPrefix(s, "\xff\xd8\xff"):
		return formatJPEG, true
	case len(s) >= 12 && s[:4] == "RIFF" && s[8:12] == "WEBP":
		return formatWebP, true
	}
	return imageFormat{}, false
}

// pngSize reads the IHDR chunk, which must come first (PNG §5.6).
func pngSize(head []byte, _ *bufio.Reader) (w, h int, detail string) {
	if len(head) < 24 || string(head[12:16]) != "IHDR" || binary.BigEndian.Uint32(head[8:12]) != 13 {
		return 0, 0, "no IHDR chunk first"
	}
	bw, bh := binary.BigEndian.Uint32(head[16:20]), binary.BigEndian.Uint32(head[20:24])
	if bw > 1<<31-1 || bh > 1<<31-1 {
		return 0, 0, "size over 2^31-1"
	}
	return int(bw), int(bh), ""
}

// gifSize reads the logical screen descriptor.
func gifSize(head []byte, _ *bufio.Reader) (w, h int, detail string) {
	if len(head) < 10 {
		return 0, 0, "no logical screen descriptor"
	}
	return int(binary.LittleEndian.Uint16(head[6:8])), int(binary.LittleEndian.Uint16(head[8:10])), ""
}

// jpegSize walks the marker segments up to the first frame header
// (SOF0…SOF15 but DHT, JPG and DAC) and reads its size.
func jpegSize(_ []byte, r *bufio.Reader) (w, h int, detail string) {
	if _, err := r.Discard(2); err != nil { // SOI
		return 0, 0, "no start of image"
	}
	for {
		if c, err := r.ReadByte(); err != nil || c != 0xff {
			return 0, 0, "no frame header before the data ends"
		}
		marker, err := r.ReadByte()
		for err == nil && marker == 0xff { // fill bytes
			marker, err = r.ReadByte()
		}
		switch {
		case err != nil:
			return 0, 0, "no frame header before the data ends"
		case marker == 0x01 || marker >= 0xd0 && marker <= 0xd7: // TEM, RSTn: no length
			continue
		case marker == 0x00 || marker == 0xd8 || marker == 0xd9 || marker == 0xda:
			return 0, 0, fmt.Sprintf("marker %#02x before the frame header", marker)
		}
		var seg [7]byte
		if _, err := io.ReadFull(r, seg[:2]); err != nil {
			return 0, 0, "segment cut short"
		}
		n := int(binary.BigEndian.Uint16(seg[:2]))
		if n < 2 {
			return 0, 0, "segment length under 2"
		}
		if isSOF(marker) {
			if n < 8 {
				return 0, 0, "frame header too short"
			}
			if _, err := io.ReadFull(r, seg[2:7]); err != nil {
				return 0, 0, "frame header cut short"
			}
			return int(binary.BigEndian.Uint16(seg[5:7])), int(binary.BigEndian.Uint16(seg[3:5])), ""
		}
		if _, err := r.Discard(n - 2); err != nil {
			return 0, 0, "segment cut short"
		}
	}
}

// isSOF reports whether marker starts a frame header: SOF0…SOF15, which
// share C0…CF with DHT (C4), JPG (C8) and DAC (CC).
func isSOF(marker byte) bool {
	return marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc
}

// webpSize reads the first chunk: a lossy (VP8 ), lossless (VP8L) or
// extended (VP8X) header, laid out as the WebP container specification says.
func webpSize(head []byte, _ *bufio.Reader) (w, h int, detail string) {
	const cutShort = "header cut short"
	if len(head) < 16 {
		return 0, 0, cutShort
	}
	le24 := func(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 }
	switch string(head[12:16]) {
	case "VP8 ":
		if len(head) < 30 {
			return 0, 0, cutShort
		}
		if head[20]&1 != 0 || string(head[23:26]) != "\x9d\x01\x2a" {
			return 0, 0, "VP8 key frame start code missing"
		}
		return int(binary.LittleEndian.Uint16(head[26:28]) & 0x3fff),
			int(binary.LittleEndian.Uint16(head[28:30]) & 0x3fff), ""
	case "VP8L":
		if len(head) < 25 {
			return 0, 0, cutShort
		}
		if head[20] != 0x2f || head[24]>>5 != 0 {
			return 0, 0, "VP8L signature or version wrong"
		}
		bits := binary.LittleEndian.Uint32(head[21:25])
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1, ""
	case "VP8X":
		if len(head) < 30 {
			return 0, 0, cutShort
		}
		return le24(head[24:27]) + 1, le24(head[27:30]) + 1, ""
	}
	return 0, 0, "first chunk is not VP8, VP8L or VP8X"
}

// leftOutSentence says, in the relay's words, which picture was left out
// and why; the only words of the tab's it quotes, the MIME type, are marked
// as data (SPEC §4).
func leftOutSentence(tag string, index int, img Media, w, h int, err error) string {
	lead := fmt.Sprintf("Picture %d was left out: ", index)
	var ie *ImageError
	errors.As(err, &ie)
	switch {
	case errors.Is(err, ErrImageBytes):
		return lead + fmt.Sprintf("it has %s bytes of base64; the limit is %s (10 MiB).",
			formatCount(len(img.Data)), formatCount(ImageMaxBase64Bytes))
	case errors.Is(err, ErrImageSide):
		return lead + fmt.Sprintf("it is %s × %s pixels; the limit is %s pixels a side.",
			formatCount(w), formatCount(h), formatCount(ImageMaxSide))
	case errors.Is(err, ErrImageBase64):
		return lead + "its data is not standard base64."
	case errors.Is(err, ErrImageMimeType) && ie != nil:
		return lead + fmt.Sprintf("its type is given as %s but its bytes are a %s picture.",
			QuoteName(tag, Clip(img.MimeType, 64)), ie.Format)
	case errors.Is(err, ErrImageHeader) && ie != nil:
		return lead + fmt.Sprintf("its bytes start like a %s picture but its size cannot be read.", ie.Format)
	}
	return lead + "its bytes are not a PNG, GIF, JPEG or WebP picture."
}
