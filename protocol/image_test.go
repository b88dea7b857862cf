package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

// smallImage is a w × h picture to encode.
func smallImage(w, h int) *image.Paletted {
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	img.SetColorIndex(0, 0, 1)
	return img
}

func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, smallImage(w, h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gifBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gif.Encode(&b, smallImage(w, h), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, smallImage(w, h), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

// encodedPNG is a real w × h PNG in base64.
func encodedPNG(t testing.TB, w, h int) string { return b64(pngBytes(t, w, h)) }

// patchedPNG is a small real PNG whose IHDR says w × h.
func patchedPNG(t testing.TB, w, h uint32) string {
	data := pngBytes(t, 2, 2)
	binary.BigEndian.PutUint32(data[16:], w)
	binary.BigEndian.PutUint32(data[20:], h)
	return b64(data)
}

func patchedGIF(t testing.TB, w, h uint16) string {
	data := gifBytes(t, 2, 2)
	binary.LittleEndian.PutUint16(data[6:], w)
	binary.LittleEndian.PutUint16(data[8:], h)
	return b64(data)
}

// sof0 returns the offset of the first SOF0 marker of a JPEG.
func sof0(t testing.TB, data []byte) int {
	i := bytes.Index(data, []byte{0xff, 0xc0})
	if i < 0 {
		t.Fatal("no SOF0 in the encoded JPEG")
	}
	return i
}

// patchedJPEG is a small real JPEG whose frame header says w × h, with
// marker written as its frame marker and extra inserted after SOI.
func patchedJPEG(t testing.TB, w, h uint16, marker byte, extra []byte) string {
	data := jpegBytes(t, 2, 2)
	i := sof0(t, data)
	data[i+1] = marker
	binary.BigEndian.PutUint16(data[i+5:], h)
	binary.BigEndian.PutUint16(data[i+7:], w)
	return b64(append(append(data[:2:2], extra...), data[2:]...))
}

// jpegSegment is a marker segment holding n bytes.
func jpegSegment(marker byte, n int) []byte {
	seg := []byte{0xff, marker, byte((n + 2) >> 8), byte(n + 2)}
	return append(seg, make([]byte, n)...)
}

// webp builds a RIFF WebP file holding one chunk.
func webp(fourcc string, chunk []byte) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(4+8+len(chunk)))
	b.WriteString("WEBP")
	b.WriteString(fourcc)
	binary.Write(&b, binary.LittleEndian, uint32(len(chunk)))
	b.Write(chunk)
	return b.Bytes()
}

func webpVP8(w, h uint16) string {
	chunk := []byte{0x50, 0x01, 0x00, 0x9d, 0x01, 0x2a, 0, 0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint16(chunk[6:], w)
	binary.LittleEndian.PutUint16(chunk[8:], h)
	return b64(webp("VP8 ", chunk))
}

func webpVP8L(w, h uint32) string {
	chunk := []byte{0x2f, 0, 0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(chunk[1:], (w-1)|(h-1)<<14|1<<28) // alpha used, version 0
	return b64(webp("VP8L", chunk))
}

func webpVP8X(w, h uint32) string {
	chunk := make([]byte, 10)
	chunk[0] = 0x10 // alpha
	w, h = w-1, h-1
	copy(chunk[4:7], []byte{byte(w), byte(w >> 8), byte(w >> 16)})
	copy(chunk[7:10], []byte{byte(h), byte(h >> 8), byte(h >> 16)})
	return b64(webp("VP8X", chunk))
}

// imageCase is a picture and what ImageCheck must say of it.
type imageCase struct {
	name       string
	img        Media
	wantW      int
	wantH      int
	wantErr    error
	wantFormat string
}

// pngGIFCases are PNG and GIF pictures, and the byte limit.
func pngGIFCases(t testing.TB) []imageCase {
	padded := encodedPNG(t, 3, 2)
	exactLimit := padded[:len(padded)-len(padded)%4-4] + strings.Repeat("A", ImageMaxBase64Bytes-(len(padded)-len(padded)%4-4))
	return []imageCase{
		{"png", Media{"image/png", padded}, 3, 2, nil, ""},
		{"png without padding", Media{"image/png", strings.TrimRight(padded, "=")}, 3, 2, nil, ""},
		{"png mime in capitals", Media{" Image/PNG ", padded}, 3, 2, nil, ""},
		{"png at the side limit", Media{"image/png", patchedPNG(t, 8000, 8000)}, 8000, 8000, nil, ""},
		{"png too wide", Media{"image/png", patchedPNG(t, 8001, 10)}, 8001, 10, ErrImageSide, "PNG"},
		{"png too tall", Media{"image/png", patchedPNG(t, 10, 9000)}, 10, 9000, ErrImageSide, "PNG"},
		{"png of zero pixels", Media{"image/png", patchedPNG(t, 0, 10)}, 0, 0, ErrImageHeader, "PNG"},
		{"png size past 2^31", Media{"image/png", patchedPNG(t, 1<<31, 1)}, 0, 0, ErrImageHeader, "PNG"},
		{"png without IHDR", Media{"image/png", b64([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIDAT0123456789"))}, 0, 0, ErrImageHeader, "PNG"},
		{"png cut short", Media{"image/png", b64([]byte("\x89PNG\r\n\x1a\n\x00\x00"))}, 0, 0, ErrImageHeader, "PNG"},
		{"base64 at the byte limit", Media{"image/png", exactLimit}, 3, 2, nil, ""},
		{"one byte over", Media{"image/png", exactLimit + "A"}, 0, 0, ErrImageBytes, ""},
		{"gif", Media{"image/gif", b64(gifBytes(t, 5, 4))}, 5, 4, nil, ""},
		{"gif too large", Media{"image/gif", patchedGIF(t, 65535, 2)}, 65535, 2, ErrImageSide, "GIF"},
		{"gif cut short", Media{"image/gif", b64([]byte("GIF89a\x01"))}, 0, 0, ErrImageHeader, "GIF"},
		{"png called gif", Media{"image/gif", padded}, 0, 0, ErrImageMimeType, "PNG"},
	}
}

// jpegWebPCases are JPEG and WebP pictures.
func jpegWebPCases(t testing.TB) []imageCase {
	return []imageCase{
		{"jpeg", Media{"image/jpeg", b64(jpegBytes(t, 7, 5))}, 7, 5, nil, ""},
		{"jpeg too large", Media{"image/jpeg", patchedJPEG(t, 9000, 100, 0xc0, nil)}, 9000, 100, ErrImageSide, "JPEG"},
		{"jpeg progressive after a big APP1 and fill bytes", Media{"image/jpeg", patchedJPEG(t, 640, 480, 0xc2,
			append(append(jpegSegment(0xe1, 60_000), 0xff, 0xff), jpegSegment(0xfe, 10)...))}, 640, 480, nil, ""},
		{"jpeg DHT DAC and JPG are not frames", Media{"image/jpeg", patchedJPEG(t, 30, 20, 0xc1,
			append(append(jpegSegment(0xc4, 20), jpegSegment(0xcc, 2)...), jpegSegment(0xc8, 3)...))}, 30, 20, nil, ""},
		{"jpeg height given later", Media{"image/jpeg", patchedJPEG(t, 30, 0, 0xc0, nil)}, 0, 0, ErrImageHeader, "JPEG"},
		{"jpeg without a frame", Media{"image/jpeg", b64([]byte{0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0, 0xff, 0xda, 0, 2})}, 0, 0, ErrImageHeader, "JPEG"},
		{"jpeg segment past the end", Media{"image/jpeg", b64(append([]byte{0xff, 0xd8}, jpegSegment(0xe1, 100)[:50]...))}, 0, 0, ErrImageHeader, "JPEG"},
		{"jpeg bad segment length", Media{"image/jpeg", b64([]byte{0xff, 0xd8, 0xff, 0xe0, 0, 1})}, 0, 0, ErrImageHeader, "JPEG"},
		{"jpeg garbage between segments", Media{"image/jpeg", b64([]byte{0xff, 0xd8, 0xff, 0xe0, 0, 2, 0x12})}, 0, 0, ErrImageHeader, "JPEG"},
		{"webp lossy", Media{"image/webp", webpVP8(320, 240)}, 320, 240, nil, ""},
		{"webp lossy too large", Media{"image/webp", webpVP8(16383, 2)}, 16383, 2, ErrImageSide, "WebP"},
		{"webp lossless", Media{"image/webp", webpVP8L(8000, 1)}, 8000, 1, nil, ""},
		{"webp lossless too large", Media{"image/webp", webpVP8L(16384, 16384)}, 16384, 16384, ErrImageSide, "WebP"},
		{"webp extended", Media{"image/webp", webpVP8X(1, 7999)}, 1, 7999, nil, ""},
		{"webp extended too large", Media{"image/webp", webpVP8X(1<<24, 3)}, 1 << 24, 3, ErrImageSide, "WebP"},
		{"webp lossy not a key frame", Media{"image/webp", b64(webp("VP8 ", []byte{0x51, 1, 0, 0x9d, 1, 0x2a, 1, 0, 1, 0}))}, 0, 0, ErrImageHeader, "WebP"},
		{"webp lossless wrong signature", Media{"image/webp", b64(webp("VP8L", []byte{0x2e, 0, 0, 0, 0, 0, 0, 0, 0, 0}))}, 0, 0, ErrImageHeader, "WebP"},
		{"webp unknown chunk", Media{"image/webp", b64(webp("ALPH", make([]byte, 10)))}, 0, 0, ErrImageHeader, "WebP"},
		{"webp cut short", Media{"image/webp", b64([]byte("RIFF\x00\x00\x00\x00WEBPVP8X"))}, 0, 0, ErrImageHeader, "WebP"},
		{"jpeg called jpg", Media{"image/jpg", b64(jpegBytes(t, 1, 1))}, 0, 0, ErrImageMimeType, "JPEG"},
	}
}

// encodingCases are pictures refused for their type or their base64.
func encodingCases(t testing.TB) []imageCase {
	padded := encodedPNG(t, 3, 2)
	return []imageCase{
		{"empty mime", Media{"", padded}, 0, 0, ErrImageMimeType, "PNG"},
		{"unknown format", Media{"image/png", b64([]byte("<svg xmlns='http://www.w3.org/2000/svg'/>"))}, 0, 0, ErrImageFormat, ""},
		{"empty data", Media{"image/png", ""}, 0, 0, ErrImageFormat, ""},
		{"url-safe alphabet", Media{"image/png", "iVBO-_=="}, 0, 0, ErrImageBase64, ""},
		{"newline inside", Media{"image/png", padded[:8] + "\n" + padded[8:]}, 0, 0, ErrImageBase64, ""},
		{"padding in the middle", Media{"image/png", "iVBO=Rw0"}, 0, 0, ErrImageBase64, ""},
		{"wrong padding", Media{"image/png", "iVBORw0K="}, 0, 0, ErrImageBase64, ""},
		{"length one past a quantum", Media{"image/png", "iVBORw0KG"}, 0, 0, ErrImageBase64, ""},
		{"data URL", Media{"image/png", "data:image/png;base64," + padded}, 0, 0, ErrImageBase64, ""},
	}
}

func TestImageCheck(t *testing.T) {
	tests := append(append(pngGIFCases(t), jpegWebPCases(t)...), encodingCases(t)...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, h, err := ImageCheck(tt.img)
			if w != tt.wantW || h != tt.wantH {
				t.Errorf("size = %d × %d, want %d × %d", w, h, tt.wantW, tt.wantH)
			}
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				return
			}
			var ie *ImageError
			if !errors.As(err, &ie) || ie.Format != tt.wantFormat {
				t.Errorf("err = %#v, want an *ImageError with Format %q", err, tt.wantFormat)
			}
			if !strings.HasPrefix(err.Error(), "protocol: picture") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestLeftOutSentence(t *testing.T) {
	long := "image/" + strings.Repeat("x", 100)
	tests := []struct {
		name string
		img  Media
		want string
	}{
		{"too many bytes", Media{"image/png", strings.Repeat("A", ImageMaxBase64Bytes+4)},
			"Picture 1 was left out: it has 10,485,764 bytes of base64; the limit is 10,485,760 (10 MiB)."},
		{"too large", Media{"image/webp", webpVP8X(9000, 300)},
			"Picture 1 was left out: it is 9,000 × 300 pixels; the limit is 8,000 pixels a side."},
		{"header", Media{"image/gif", b64([]byte("GIF87a"))},
			"Picture 1 was left out: its bytes start like a GIF picture but its size cannot be read."},
		{"unknown", Media{"image/bmp", b64([]byte("BM......"))},
			"Picture 1 was left out: its bytes are not a PNG, GIF, JPEG or WebP picture."},
		{"long mime clipped", Media{long, webpVP8(1, 1)},
			"Picture 1 was left out: its type is given as " + QuoteName(DefaultDataTag, long[:64]+"…") + " but its bytes are a WebP picture."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, h, err := ImageCheck(tt.img)
			if err == nil {
				t.Fatal("ImageCheck passed the picture")
			}
			if got := leftOutSentence(DefaultDataTag, 1, tt.img, w, h, err); got != tt.want {
				t.Errorf("sentence =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func BenchmarkImageCheckJPEG(b *testing.B) {
	img := Media{"image/jpeg", patchedJPEG(b, 640, 480, 0xc0, jpegSegment(0xe1, 60_000))}
	for b.Loop() {
		if _, _, err := ImageCheck(img); err != nil {
			b.Fatal(err)
		}
	}
}
