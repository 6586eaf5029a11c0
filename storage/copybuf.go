package storage

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/finsync/finsync/domain"
)

// copyBuf builds a COPY … FROM STDIN (FORMAT binary) stream: a header, then
// per row its field count and each field as a length and PostgreSQL's
// binary form (https://www.postgresql.org/docs/current/sql-copy.html,
// "Binary Format"). Writing the few types a sync copies directly costs a
// fraction of encoding every value through pgx's type map.
type copyBuf struct {
	b       []byte
	numeric pgtype.EncodePlan
}

// pgEpoch is PostgreSQL's zero for dates and timestamps, 2000-01-01T00:00:00Z,
// in Unix seconds.
const pgEpoch = 946_684_800

// newCopyBuf starts a stream with room for about size bytes.
func newCopyBuf(size int) *copyBuf {
	c := &copyBuf{
		b:       make([]byte, 0, size),
		numeric: pgtype.NumericCodec{}.PlanEncode(nil, pgtype.NumericOID, pgtype.BinaryFormatCode, pgtype.Numeric{}),
	}
	c.b = append(c.b, "PGCOPY\n\xff\r\n\x00"...)
	c.b = binary.BigEndian.AppendUint32(c.b, 0) // flags
	c.b = binary.BigEndian.AppendUint32(c.b, 0) // header extension length
	return c
}

// bytes ends the stream and returns it.
func (c *copyBuf) bytes() []byte {
	return binary.BigEndian.AppendUint16(c.b, 0xffff)
}

// row starts a row of n fields.
func (c *copyBuf) row(n int) { c.b = binary.BigEndian.AppendUint16(c.b, uint16(n)) }

func (c *copyBuf) null() { c.b = binary.BigEndian.AppendUint32(c.b, 0xffffffff) }

func (c *copyBuf) uuid(u [16]byte) {
	c.b = binary.BigEndian.AppendUint32(c.b, 16)
	c.b = append(c.b, u[:]...)
}

// nullUUID writes u, or NULL when u is nil.
func (c *copyBuf) nullUUID(u *[16]byte) {
	if u == nil {
		c.null()
		return
	}
	c.uuid(*u)
}

func (c *copyBuf) text(s string) {
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(s)))
	c.b = append(c.b, s...)
}

// nullText writes *s, or NULL when s is nil.
func (c *copyBuf) nullText(s *string) {
	if s == nil {
		c.null()
		return
	}
	c.text(*s)
}

func (c *copyBuf) bytea(v []byte) {
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(v)))
	c.b = append(c.b, v...)
}

func (c *copyBuf) int4(v int32) {
	c.b = binary.BigEndian.AppendUint32(c.b, 4)
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(v))
}

// date writes d's calendar day, or NULL when d is nil.
func (c *copyBuf) date(d *domain.Date) {
	if d == nil {
		c.null()
		return
	}
	day := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC).Unix()
	c.int4(int32((day - pgEpoch) / 86400))
}

func (c *copyBuf) timestamptz(t time.Time) {
	c.b = binary.BigEndian.AppendUint32(c.b, 8)
	us := (t.Unix()-pgEpoch)*1_000_000 + int64(t.Nanosecond()/1000)
	c.b = binary.BigEndian.AppendUint64(c.b, uint64(us))
}

// nullTimestamptz writes *t, or NULL when t is nil.
func (c *copyBuf) nullTimestamptz(t *time.Time) {
	if t == nil {
		c.null()
		return
	}
	c.timestamptz(*t)
}

// money writes m as numeric, exactly (pgx's own numeric encoding).
func (c *copyBuf) money(m domain.Money) error {
	d := m.Decimal()
	at := len(c.b)
	c.b = append(c.b, 0, 0, 0, 0)
	b, err := c.numeric.Encode(pgtype.Numeric{Int: d.Coefficient(), Exp: d.Exponent(), Valid: true}, c.b)
	if err != nil {
		return fmt.Errorf("encode amount %s: %w", m, err)
	}
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	c.b = b
	return nil
}

// nullMoney writes *m, or NULL when m is nil.
func (c *copyBuf) nullMoney(m *domain.Money) error {
	if m == nil {
		c.null()
		return nil
	}
	return c.money(*m)
}
