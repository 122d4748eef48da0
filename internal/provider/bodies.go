package provider

import (
	"bytes"
	"encoding/xml"
)

// bodyCredentialed is implemented by kinds whose bodies carry credentials
// that parsing never reads, such as a session of the sender's user: they
// are blanked before a body is stored or queued, since the delivery log
// shows bodies to every role and token and keeps them for the retention.
type bodyCredentialed interface {
	// RedactBody returns body with those credentials blanked, parsing into
	// the same events; body itself when it carries none.
	RedactBody(body []byte) []byte
}

// RedactBody returns a delivery body to a provider of kind as the delivery
// log and the queue keep it: with the credentials the kind declares inside
// its bodies blanked. Signatures are checked on the body as sent, before.
func RedactBody(kind string, body []byte) []byte {
	if k, ok := registry[kind].(bodyCredentialed); ok {
		return k.RedactBody(body)
	}
	return body
}

// RedactBody blanks the content of the envelope's SessionId, a live API
// session of the user sending the outbound message (when "Send Session
// ID" is ticked), keeping the element: <SessionId></SessionId>. sObject
// fields are in another namespace and keep theirs. Migration 00031 blanks
// the bodies stored before.
func (salesforce) RedactBody(body []byte) []byte {
	if !bytes.Contains(body, []byte("SessionId")) {
		return body
	}
	notifications := xml.Name{Space: sfOutboundNS, Local: "notifications"}
	session := xml.Name{Space: sfOutboundNS, Local: "SessionId"}
	d := xml.NewDecoder(bytes.NewReader(body))
	var parents []xml.Name
	var cuts [][2]int64 // content ranges to blank
	// A body that stops being XML is refused unkept (Authenticate reads it
	// first); what was found before still goes.
scan:
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name == session && len(parents) > 0 && parents[len(parents)-1] == notifications {
				start := d.InputOffset()
				if d.Skip() != nil {
					break scan
				}
				// The content ends where the element's end tag starts: the
				// last "</" before the decoder's offset.
				if i := bytes.LastIndex(body[start:d.InputOffset()], []byte("</")); i > 0 {
					cuts = append(cuts, [2]int64{start, start + int64(i)})
				}
				continue
			}
			parents = append(parents, t.Name)
		case xml.EndElement:
			if len(parents) > 0 {
				parents = parents[:len(parents)-1]
			}
		}
	}
	if len(cuts) == 0 {
		return body
	}
	out := make([]byte, 0, len(body))
	at := int64(0)
	for _, c := range cuts {
		out = append(out, body[at:c[0]]...)
		at = c[1]
	}
	return append(out, body[at:]...)
}
