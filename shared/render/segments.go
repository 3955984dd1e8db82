package render

import "unicode/utf16"

// Encoding is the character set an SMS is sent in.
type Encoding string

// The two SMS encodings.
const (
	// GSM7 is the GSM 03.38 default alphabet, 7 bits per character.
	GSM7 Encoding = "GSM-7"
	// UCS2 is UTF-16, used when any character is outside GSM-7.
	UCS2 Encoding = "UCS-2"
)

// Segment sizes of GSM 03.40: a single message, and each part of a concatenated one (whose
// user-data header takes the rest).
const (
	GSM7Single = 160
	GSM7Part   = 153
	UCS2Single = 70
	UCS2Part   = 67
)

// gsm7Basic is the GSM 03.38 basic character set; each costs one septet.
const gsm7Basic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"

// gsm7Extension is the GSM 03.38 extension table; each costs two septets (escape + char).
const gsm7Extension = "\f^{}\\[~]|€"

var gsm7Cost = func() map[rune]int {
	m := make(map[rune]int, len(gsm7Basic)+len(gsm7Extension))
	for _, r := range gsm7Basic {
		m[r] = 1
	}
	for _, r := range gsm7Extension {
		m[r] = 2
	}
	return m
}()

// Count describes how a body travels.
type Count struct {
	Encoding Encoding
	// Units is the length in the encoding's units: septets for GSM-7, UTF-16 code units for
	// UCS-2.
	Units int
	// Segments is how many SMS the body takes.
	Segments int
}

// Segments counts body as the network sends it. An empty body is one segment.
func Segments(body string) Count {
	costs := make([]int, 0, len(body))
	gsm := true
	for _, r := range body {
		c, ok := gsm7Cost[r]
		if !ok {
			gsm = false
			break
		}
		costs = append(costs, c)
	}
	if gsm {
		return pack(GSM7, costs, GSM7Single, GSM7Part)
	}
	costs = costs[:0]
	for _, r := range body {
		costs = append(costs, utf16.RuneLen(r))
	}
	return pack(UCS2, costs, UCS2Single, UCS2Part)
}

// pack fills segments greedily. A character never straddles two segments: neither a GSM-7
// escape pair nor a UTF-16 surrogate pair may be split, so a part may carry one unit less
// than its size.
func pack(enc Encoding, costs []int, single, part int) Count {
	total := 0
	for _, c := range costs {
		total += c
	}
	if total <= single {
		return Count{Encoding: enc, Units: total, Segments: 1}
	}
	segments, used := 1, 0
	for _, c := range costs {
		if used+c > part {
			segments++
			used = 0
		}
		used += c
	}
	return Count{Encoding: enc, Units: total, Segments: segments}
}
